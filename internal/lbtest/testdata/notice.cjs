// notice.cjs drives headless Chromium through the page of
// TestBrowserTimeToNotice (browser_test.go): it loads PAGE_URL, prints
// "ready" once the page holds an MCP-Flow session, waits for a line on
// stdin (the test has killed the server and started another on its
// address), tells the page, and prints the page's window.__result as one
// JSON line. playwright-core comes from js/node_modules (NODE_PATH).
//   node notice.cjs PAGE_URL TIMEOUT_MS
const { chromium } = require('playwright-core');
const readline = require('readline');

(async () => {
  const [pageURL, timeoutArg] = process.argv.slice(2);
  const timeout = Number(timeoutArg || 60000);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  const logs = [];
  try {
    const page = await browser.newPage();
    page.on('console', (m) => logs.push(m.type() + ': ' + m.text()));
    page.on('pageerror', (e) => logs.push('pageerror: ' + e.message));
    await page.goto(pageURL);
    await page.waitForFunction(() => window.__ready !== undefined, null, { timeout });
    const ready = await page.evaluate(() => window.__ready);
    if (ready !== true) {
      process.stdout.write(JSON.stringify({ error: String(ready), console: logs }) + '\n');
      return;
    }
    process.stdout.write('ready\n');
    const rl = readline.createInterface({ input: process.stdin });
    await new Promise((resolve) => rl.once('line', resolve));
    rl.close();
    await page.evaluate(() => window.__go());
    await page.waitForFunction(() => window.__result !== undefined, null, { timeout });
    const result = await page.evaluate(() => window.__result);
    result.console = logs;
    result.userAgent = await page.evaluate(() => navigator.userAgent);
    process.stdout.write(JSON.stringify(result) + '\n');
  } finally {
    await browser.close();
  }
})().catch((e) => {
  process.stdout.write(JSON.stringify({ error: 'driver: ' + e.message, console: logs }) + '\n');
});
