// inspector.mjs drives the inspector page of `mcp-flow ui` in headless
// Chromium as a user would: it waits for the tools, fills in generate's
// form and calls it, calls slow (progress) and echo, calls a long slow and
// presses its Cancel once progress shows, calls log and tone (log and audio
// datagrams), takes a screenshot, and prints what the page shows as one
// JSON line.
//   node test/inspector.mjs PAGE_URL TIMEOUT_MS SCREENSHOT.png BYTES
import { chromium } from 'playwright-core';

const [pageURL, timeoutArg, screenshot, bytes] = process.argv.slice(2);
const timeout = Number(timeoutArg || 60000);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const logs = [];
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(timeout);
  page.on('console', (m) => logs.push(m.type() + ': ' + m.text()));
  page.on('pageerror', (e) => logs.push('pageerror: ' + e.message));
  await page.goto(pageURL);
  await page.waitForSelector('#tool-generate');
  await page.fill('#tool-generate input[name=bytes]', bytes);
  await page.check('#tool-generate input[name=sha256]');
  await page.click('#tool-generate button');
  await page.waitForSelector('.stream.ok');
  await page.fill('#tool-slow input[name=steps]', '8');
  await page.fill('#tool-slow input[name=delayMs]', '30');
  await page.click('#tool-slow button');
  await page.waitForSelector('.call[data-done=ok] >> nth=1');
  await page.fill('#tool-echo input[name=text]', 'hello from the inspector');
  await page.click('#tool-echo button');
  await page.waitForSelector('.call[data-done=ok] >> nth=2');
  // Cancel: the call box must end as cancelled (the server's -32800), and
  // soon: a box that stays "running" fails here, not at the page's timeout.
  await page.fill('#tool-slow input[name=steps]', '2000');
  await page.fill('#tool-slow input[name=delayMs]', '20');
  await page.click('#tool-slow button');
  await page.waitForFunction(() => /^progress [2-9]/.test(document.querySelector('.call .head span').textContent));
  const cancelAt = Date.now();
  await page.click('.call >> nth=0 >> button:has-text("Cancel")');
  const cancelled = await page.waitForSelector('.call[data-done=cancelled]', { timeout: 10000 }).then(() => Date.now() - cancelAt, () => null);
  // Log and audio datagrams.
  await page.fill('#tool-log input[name=level]', 'warning');
  await page.fill('#tool-log input[name=message]', 'disk 91% full');
  await page.fill('#tool-log input[name=count]', '3');
  await page.click('#tool-log button');
  await page.waitForSelector('.call[data-done=ok] >> nth=3');
  await page.waitForSelector('#logs li');
  await page.fill('#tool-tone input[name=ms]', '300');
  await page.click('#tool-tone button');
  await page.waitForSelector('.call[data-done=ok] >> nth=4');
  await page.waitForFunction(() => Array.from(document.querySelectorAll('#counters tr')).some((r) => r.cells[0].textContent === 'audio datagrams' && r.cells[1].textContent !== '0'));
  await page.evaluate(() => { window.scrollTo(0, 0); document.getElementById('toolsPane').scrollTop = 0; });
  await page.screenshot({ path: screenshot, fullPage: false });
  const result = await page.evaluate(() => {
    const q = (s) => Array.from(document.querySelectorAll(s));
    const stream = document.querySelector('.stream.ok');
    return {
      status: document.getElementById('status').textContent,
      tools: q('.tool b').map((b) => b.textContent),
      args: q('#tool-generate label').map((l) => l.textContent.trim()),
      stream: { bytes: Number(stream.dataset.bytes), sha256: stream.dataset.sha256, text: stream.textContent },
      calls: q('.call').map((c) => ({ title: c.querySelector('b').textContent, state: c.querySelector('.head span').textContent, done: c.dataset.done || '', bar: c.querySelector('.bar div').style.width, result: c.querySelector('pre').textContent })),
      logs: q('#logs li').map((l) => l.textContent),
      counters: Object.fromEntries(q('#counters tr').map((r) => [r.cells[0].textContent, r.cells[1].textContent])),
      frames: q('#frames tbody tr').map((r) => Array.from(r.cells, (c) => c.textContent)),
    };
  });
  result.cancelledMs = cancelled;
  result.console = logs;
  process.stdout.write(JSON.stringify(result) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e && e.stack || e), console: logs }) + '\n');
} finally {
  await browser.close();
}
