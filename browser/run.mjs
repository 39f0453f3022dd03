// run.mjs drives headless Chromium through the browser peer's page and prints
// what the page found as one JSON line on stdout.
//   node run.mjs PAGE_URL [TIMEOUT_MS]
import { chromium } from 'playwright-core';

const [pageURL, timeoutArg] = process.argv.slice(2);
const timeout = Number(timeoutArg || 60000);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  const logs = [];
  page.on('console', (m) => logs.push(m.type() + ': ' + m.text()));
  page.on('pageerror', (e) => logs.push('pageerror: ' + e.message));
  await page.goto(pageURL);
  await page.waitForFunction(() => window.__result !== undefined, null, { timeout });
  const result = await page.evaluate(() => window.__result);
  result.console = logs;
  result.userAgent = await page.evaluate(() => navigator.userAgent);
  process.stdout.write(JSON.stringify(result) + '\n');
} finally {
  await browser.close();
}
