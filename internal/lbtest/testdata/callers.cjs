// callers.cjs drives headless Chromium through the page of the browser
// kind of TestRollingRestart (browserload_test.go): it loads PAGE_URL,
// prints "ready" once the page runs, and, once the page has stopped (the
// test answers 204 to every /next), closes the browser and prints the
// page's counters, with what Chromium's net log says of its QUIC
// connections (netlogSummary), as one JSON line. playwright-core comes
// from js/node_modules (NODE_PATH).
//   node callers.cjs PAGE_URL TIMEOUT_MS
const { chromium } = require('playwright-core');
const fs = require('fs');

// netlogSummary reads Chromium's net log (NETLOG; a log cut short by a
// crash lacks its closing brackets) and says why its QUIC connections
// closed: the count of each close reason (QUIC_SESSION_CLOSED's details:
// "Received stateless reset.", "No recent network activity...", the
// drain's "WebTransportState::ERROR reached but the connection still
// open", the page's own "WebTransport client terminated"), the first
// connections closed otherwise, each with the longest it went without a
// packet, and stall, the longest time no connection received any packet
// while one was open: a browser that could not run (its network
// service starved) shows there, a dead path or server only in its own
// connections' gaps.
function netlogSummary(path) {
  const text = fs.readFileSync(path, 'utf8').trimEnd();
  let log;
  try {
    log = JSON.parse(text);
  } catch (e) {
    log = JSON.parse(text.replace(/,$/, '') + ']}');
  }
  const types = {};
  for (const [name, id] of Object.entries(log.constants.logEventTypes)) types[id] = name;
  const t0 = Number(log.events[0].time);
  const conns = new Map(); // source id → { last, gap }
  const reasons = {}, other = [];
  let open = 0, lastAny = 0, stall = 0;
  const routine = /^(WebTransport client terminated|WebTransportState::ERROR reached but the connection still open)$/;
  for (const e of log.events) {
    const type = types[e.type], t = Number(e.time) - t0;
    if (type === 'QUIC_SESSION_WEBTRANSPORT_SESSION_READY') {
      conns.set(e.source.id, { last: t, gap: 0 });
      if (open++ === 0) lastAny = t;
    } else if (type === 'QUIC_SESSION_PACKET_RECEIVED' && conns.has(e.source.id)) {
      const c = conns.get(e.source.id);
      c.gap = Math.max(c.gap, t - c.last);
      c.last = t;
      stall = Math.max(stall, t - lastAny);
      lastAny = t;
    } else if (type === 'QUIC_SESSION_CLOSED') {
      const why = (e.params && e.params.details) || 'quic_error ' + (e.params && e.params.quic_error);
      reasons[why] = (reasons[why] || 0) + 1;
      const c = conns.get(e.source.id);
      if (c) {
        conns.delete(e.source.id);
        open--;
        if (!routine.test(why) && other.length < 12) {
          other.push({ atMs: t, why, quicError: e.params.quic_error, fromPeer: e.params.from_peer, silentMs: t - c.last, longestGapMs: Math.max(c.gap, t - c.last) });
        }
      }
    }
  }
  return { reasons, otherCloses: other, stallMs: stall };
}

(async () => {
  let counts;
  const [pageURL, timeoutArg] = process.argv.slice(2);
  const timeout = Number(timeoutArg || 60000);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    // NETLOG (the test always sets it: in MCP_FLOW_LB_LOGDIR, else in
    // its temporary directory): Chromium's net log, whose QUIC events say
    // why each connection closed (netlogSummary).
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
    counts = await page.evaluate(() => ({ opened: window.__opened, openFailures: window.__openFailures.slice(0, 10), failedOpens: window.__openFailures.length, userAgent: navigator.userAgent }));
  } finally {
    await browser.close();
  }
  if (process.env.NETLOG) {
    try {
      counts.quic = netlogSummary(process.env.NETLOG);
    } catch (e) {
      counts.quic = { error: 'reading the net log: ' + e.message };
    }
  }
  process.stdout.write(JSON.stringify(counts) + '\n');
})().catch((e) => {
  process.stdout.write(JSON.stringify({ error: 'driver: ' + e.message }) + '\n');
  process.exitCode = 1;
});
