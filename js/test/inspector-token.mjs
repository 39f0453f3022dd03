// inspector-token.mjs drives the inspector of `mcp-flow ui` against a
// server that checks access tokens (docs/spec.md §9.1), in headless
// Chromium or Firefox (puppeteer-core: CDP for Chromium, WebDriver BiDi for
// Firefox): the page's own connect, without a token, must fail; then the
// token typed into the token field and Connect must connect, and whoami
// must answer. It prints what the page showed, and where the token could
// have been kept (the page's URL, storage, cookies), as one JSON line.
//   CHROMIUM=… (or FIREFOX=…) node test/inspector-token.mjs PAGE_URL TIMEOUT_MS TOKEN
import puppeteer from 'puppeteer-core';

const [pageURL, timeoutArg, token] = process.argv.slice(2);
const timeout = Number(timeoutArg || 60000);
const firefox = !!process.env.FIREFOX;
const browser = await puppeteer.launch({
  browser: firefox ? 'firefox' : 'chrome',
  executablePath: firefox ? process.env.FIREFOX : (process.env.CHROMIUM || '/usr/bin/chromium'),
  headless: true,
  protocol: firefox ? 'webDriverBiDi' : 'cdp',
  args: firefox ? [] : ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const logs = [];
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(timeout);
  page.on('console', (m) => logs.push(m.type() + ': ' + m.text()));
  page.on('pageerror', (e) => logs.push('pageerror: ' + (e && e.message || e)));
  await page.goto(pageURL);
  // The page connects at once, with the token field empty.
  await page.waitForFunction(() => document.getElementById('status').className === 'err', { polling: 50 });
  const withoutToken = await page.$eval('#status', (e) => e.textContent);
  await page.type('#token', token);
  await page.click('#connectBtn');
  await page.waitForFunction(() => /^connected to/.test(document.getElementById('status').textContent), { polling: 50, timeout: 20000 });
  const connected = await page.$eval('#status', (e) => e.textContent);
  await page.waitForSelector('#tool-whoami button');
  await page.click('#tool-whoami button');
  await page.waitForSelector('.call[data-done=ok]');
  const whoami = await page.$eval('.call[data-done=ok] pre', (e) => e.textContent);
  const kept = await page.evaluate(() => ({
    href: location.href,
    storage: JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }),
    cookie: document.cookie,
    fieldType: document.getElementById('token').type,
  }));
  process.stdout.write(JSON.stringify({ withoutToken, connected, whoami, kept, console: logs }) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({ error: String(e && e.stack || e), console: logs }) + '\n');
} finally {
  await browser.close();
}
