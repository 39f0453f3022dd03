// run.mjs drives headless Chromium through a test page and prints what the
// page left in window.__result as one JSON line on stdout.
//   node test/run.mjs PAGE_URL [TIMEOUT_MS] [SCREENSHOT.png] [--chromium-flag ...]
// With SCREENSHOT, the page's window.__screenshotReady (when it is set)
// decides the moment of the full-page screenshot. Arguments that begin
// with -- are passed to Chromium.
import { chromium } from 'playwright-core';

const [pageURL, timeoutArg, ...rest] = process.argv.slice(2);
const flags = rest.filter((a) => a.startsWith('--'));
const screenshot = rest.find((a) => !a.startsWith('--'));
const timeout = Number(timeoutArg || 60000);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', ...flags],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const logs = [];
  page.on('console', (m) => logs.push(m.type() + ': ' + m.text()));
  page.on('pageerror', (e) => logs.push('pageerror: ' + e.message));
  await page.goto(pageURL);
  await page.waitForFunction(() => window.__result !== undefined, null, { timeout });
  const result = await page.evaluate(() => window.__result);
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
  result.console = logs;
  result.userAgent = await page.evaluate(() => navigator.userAgent);
  process.stdout.write(JSON.stringify(result) + '\n');
} finally {
  await browser.close();
}
