// callers.cjs drives headless Chromium through the page of the browser
// kind of TestRollingRestart (browserload_test.go): it loads PAGE_URL,
// prints "ready" once the page runs, and, once the page has stopped (the
// test answers 204 to every /next), prints its counters as one JSON line
// and closes the browser. playwright-core comes from js/node_modules
// (NODE_PATH).
//   node callers.cjs PAGE_URL TIMEOUT_MS
const { chromium } = require('playwright-core');

(async () => {
  const [pageURL, timeoutArg] = process.argv.slice(2);
  const timeout = Number(timeoutArg || 60000);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    // NETLOG (the test sets it with MCP_FLOW_LB_LOGDIR): Chromium's net
    // log, whose QUIC events say why a connection closed.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'].concat(
      process.env.NETLOG ? ['--log-net-log=' + process.env.NETLOG, '--net-log-capture-mode=Everything'] : []),
  });
  try {
    const page = await browser.newPage();
    // The page's workers reach the test through here (callers.html).
    const base = new URL(pageURL).origin;
    await page.exposeFunction('lbNext', async (s) => {
      const r = await fetch(base + '/next?s=' + s);
      return r.status === 204 ? null : await r.text();
    });
    await page.exposeFunction('lbDone', async (body) => {
      await fetch(base + '/done', { method: 'POST', body });
    });
    page.on('console', (m) => process.stderr.write('console ' + m.type() + ': ' + m.text() + '\n'));
    page.on('pageerror', (e) => process.stderr.write('pageerror: ' + e.message + '\n'));
    await page.goto(pageURL);
    await page.waitForFunction(() => window.__ready === true, null, { timeout });
    process.stdout.write('ready\n');
    await page.waitForFunction(() => window.__done === true, null, { timeout: 0, polling: 200 });
    const counts = await page.evaluate(() => ({ opened: window.__opened, openFailures: window.__openFailures.slice(0, 10), failedOpens: window.__openFailures.length, userAgent: navigator.userAgent }));
    process.stdout.write(JSON.stringify(counts) + '\n');
  } finally {
    await browser.close();
  }
})().catch((e) => {
  process.stdout.write(JSON.stringify({ error: 'driver: ' + e.message }) + '\n');
  process.exitCode = 1;
});
