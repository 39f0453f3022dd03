// firefox.mjs drives headless Firefox (Debian's firefox-esr) through a test
// page with puppeteer-core over WebDriver BiDi (Playwright drives only its
// own patched Firefox builds), and prints what the page left in
// window.__result as one JSON line on stdout, as run.mjs does for Chromium.
//   FIREFOX=/usr/bin/firefox-esr node test/firefox.mjs PAGE_URL [TIMEOUT_MS]
// The profile is a fresh one of puppeteer's in a temporary folder, removed
// on close. Nothing on stdout but the result.
import puppeteer from 'puppeteer-core';

const [pageURL, timeoutArg] = process.argv.slice(2);
const timeout = Number(timeoutArg || 60000);
const browser = await puppeteer.launch({
  browser: 'firefox',
  executablePath: process.env.FIREFOX || '/usr/bin/firefox-esr',
  headless: true,
  protocol: 'webDriverBiDi',
  // No window of Firefox's own on stdout/stderr: the driver's stdout is the result.
  dumpio: false,
  extraPrefsFirefox: {
    // WebTransport is on by default in Firefox ESR 115+; said here so that
    // a profile default cannot turn it off under the test.
    'network.webtransport.enabled': true,
    'network.webtransport.datagrams.enabled': true,
  },
});
try {
  const page = await browser.newPage();
  const logs = [];
  page.on('console', (m) => logs.push(m.type() + ': ' + m.text()));
  page.on('pageerror', (e) => logs.push('pageerror: ' + (e && e.message || e)));
  await page.goto(pageURL);
  await page.waitForFunction(() => window.__result !== undefined, { timeout, polling: 50 });
  const result = await page.evaluate(() => window.__result);
  result.console = logs;
  result.userAgent = await page.evaluate(() => navigator.userAgent);
  process.stdout.write(JSON.stringify(result) + '\n');
} finally {
  await browser.close();
}
