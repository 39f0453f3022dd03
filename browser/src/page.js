// The browser test scenario: it runs against mcp-flow-server and leaves its
// findings in window.__result for the driver to check (run.mjs in Chromium,
// js/test/firefox.mjs in Firefox); deno.mjs runs the same scenario in Deno
// and prints them.
import { Client } from './mcpflow.js';

function hex(bytes) { return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(''); }
function unhex(s) { return Uint8Array.from(s.match(/../g), (h) => parseInt(h, 16)); }

// settle reports what a promise did within ms: {state: 'resolved', value},
// {state: 'rejected', error} or {state: 'pending'} (it had not settled),
// with the time it took.
function settle(promise, ms) {
  const t0 = performance.now();
  let timer;
  const late = new Promise((resolve) => { timer = setTimeout(() => resolve({ state: 'pending' }), ms); });
  const done = promise.then((value) => ({ state: 'resolved', value }), (e) => ({ state: 'rejected', error: String(e && e.message || e), name: e && e.name, source: e && e.source, streamErrorCode: e && e.streamErrorCode }));
  return Promise.race([done, late]).then((r) => { clearTimeout(timer); return { ...r, ms: Math.round(performance.now() - t0) }; });
}

// shutdown runs the guide's graceful shutdown (guide §7; spec §7.2) as the
// sender and reports what happened, as data for the test to grade: the
// requests written just before $/shutdown (a slow tool call and a ping,
// which the drain must answer), whether and when the server finished the
// control stream, and what the session's `closed` promise did within
// closedWaitMs of our own FIN (resolved with which closeCode, rejected with
// what, or still pending): engines differ there (issue 28).
async function shutdown(c, closedWaitMs) {
  const t0 = performance.now();
  const ms = () => Math.round(performance.now() - t0);
  const serverFIN = new Promise((resolve) => { if (c.controlClosed) resolve(); else c.onControlClosed = resolve; });
  // Written in this order on the control stream, none awaited first.
  const inflight = [
    ['slow', c.request('tools/call', { name: 'slow', arguments: { steps: 3, delayMs: 30 } })],
    ['ping', c.request('ping')],
  ];
  await c.notify('$/shutdown', { reason: 'browser test done' });
  const sentMs = ms();
  const answers = [];
  for (const [name, req] of inflight) {
    const r = await settle(req.response, closedWaitMs);
    const m = r.value || {};
    answers.push({ name, state: r.state, result: m.result !== undefined, error: m.error, ms: ms() });
  }
  const fin = await settle(serverFIN, closedWaitMs);
  const finMs = fin.state === 'resolved' ? ms() : undefined;
  await c.writer.close().catch(() => {});
  const closed = await settle(c.wt.closed, closedWaitMs);
  return {
    sentMs, answers, serverFIN: fin.state === 'resolved', finMs,
    closed: closed.state, closeInfo: closed.value, closeError: closed.error, closeErrorName: closed.name,
    closedMs: closed.state === 'pending' ? undefined : ms(), closedWaitMs,
    protocolErrors: c.protocolErrors,
  };
}

// run is the scenario; q holds its parameters (url, hash, enc, size,
// closedWait), the page's query.
export async function run(q) {
  const out = { steps: [] };
  const step = (name, data) => out.steps.push({ name, ...data });
  const c = new Client(q.get('url'), { certHash: unhex(q.get('hash')), encodings: (q.get('enc') || 'cbor,json').split(',') });
  await c.connect();
  step('connected');
  const init = await c.initialize();
  step('initialize', { initializeFrameBytes: c.initializeFrame.length, transport: init.transport, serverInfo: init.serverInfo });

  const list = await c.call('tools/list', {});
  step('tools/list', { tools: list.result.tools.map((t) => t.name) });

  const echo = await c.call('tools/call', { name: 'echo', arguments: { text: 'こんにちは from the browser' } });
  step('echo', { text: echo.result.content[0].text });

  const size = Number(q.get('size') || 1048576);
  const gen = c.request('tools/call', { name: 'generate', arguments: { bytes: size, sha256: true } });
  const genRes = await gen.response;
  const ref = genRes.result.content.find((x) => x.type === 'ref/stream');
  const stream = await c.waitStream(gen.id, ref.streamTag);
  const data = await stream.data;
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', data));
  step('generate', { requestId: gen.id, ref, header: stream.header, bytes: data.length, sha256: hex(digest),
    reported: genRes.result.structuredContent.sha256 });

  const progress = [];
  const slow = c.request('tools/call', { name: 'slow', arguments: { steps: 5, delayMs: 20 } }, { onProgress: (p) => progress.push(p) });
  await slow.response;
  step('progress', { updates: progress.map((p) => ({ via: p.via, channel: p.channel, requestId: p.requestId, progress: p.progress, total: p.total })), requestId: slow.id });

  const cancelled = [];
  const long = c.request('tools/call', { name: 'slow', arguments: { steps: 1000, delayMs: 20 } }, { onProgress: (p) => cancelled.push(p) });
  while (cancelled.length < 2) await new Promise((r) => setTimeout(r, 10));
  await c.notify('$/cancel', { requestId: long.id, reason: 'user pressed Escape' });
  const cancelRes = await long.response;
  step('cancel', { error: cancelRes.error });

  const ping = await c.call('ping');
  step('ping', { result: ping.result });

  step('shutdown', await shutdown(c, Number(q.get('closedWait') || 5000)));
  return out;
}

if (globalThis.window && globalThis.location) {
  run(new URLSearchParams(location.search)).then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e && e.stack || e) }; });
}
