// The package's browser test: the real MCP SDK clients, v2
// (@modelcontextprotocol/client) and v1 (@modelcontextprotocol/sdk), over
// WebTransportClientTransport against mcp-flow-server's test tools. The
// findings go to window.__result for js/js_test.go to judge.
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { WebTransportClientTransport, bytesToBase64 } from '../src/index.js';

function hex(bytes) { return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(''); }
async function sha256(bytes) { return hex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))); }
const fromBase64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

async function readAll(readable) {
  const reader = readable.getReader();
  const chunks = []; let total = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(value); total += value.length;
  }
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) { out.set(c, off); off += c.length; }
  return out;
}

// within settles with what p settles with, or {timeout} once ms have passed
// (so that a hang is reported as one, long before the SDK's 60 s timeout).
function within(ms, p) {
  let timer;
  const t0 = performance.now();
  const done = (r) => { clearTimeout(timer); return { ...r, ms: Math.round(performance.now() - t0) }; };
  return Promise.race([
    p.then((value) => done({ value }), (e) => done({ error: e })),
    new Promise((resolve) => { timer = setTimeout(() => resolve({ timeout: true, ms }), ms); }),
  ]);
}

// errorOf describes a rejection for the Go side.
function errorOf(r) {
  if (r.timeout) return { timeout: true, ms: r.ms };
  if (!r.error) return { error: null, ms: r.ms };
  const e = r.error;
  return { error: `${e.name}: ${e.message}`, code: e.code, requestId: e.requestId, streamTag: e.streamTag, ms: r.ms };
}

// waitFor resolves once cond() holds, checked whenever poke() is called, or
// after ms; it returns whether cond() held.
function waiter() {
  const waits = [];
  return {
    poke() { for (const w of [...waits]) if (w.cond()) { waits.splice(waits.indexOf(w), 1); clearTimeout(w.timer); w.resolve(true); } },
    waitFor(cond, ms) {
      if (cond()) return Promise.resolve(true);
      return new Promise((resolve) => {
        const w = { cond, resolve };
        w.timer = setTimeout(() => { waits.splice(waits.indexOf(w), 1); resolve(false); }, ms);
        waits.push(w);
      });
    },
  };
}

const sampler = (prompt) => ({ role: 'assistant', content: { type: 'text', text: 'the browser answers: ' + prompt }, model: 'browser-handler' });

const trail = [];
const at = (what) => trail.push(Math.round(performance.now()) + ' ' + what);

// connect makes an SDK client of version over a new transport with opts.
async function connect(version, q, opts = {}, setup) {
  const transport = new WebTransportClientTransport(q.get('url'), { serverCertificateHashes: q.get('hash'), encodings: ['cbor', 'json'], ...opts });
  const info = { name: 'mcp-flow-js-test-' + version, version: '0.1.0' };
  const caps = { capabilities: { sampling: {} } };
  const client = version === 'v2' ? new ClientV2(info, caps) : new ClientV1(info, caps);
  const errors = [];
  client.onerror = (e) => errors.push(String(e && e.message || e));
  if (setup) setup(client, transport);
  await client.connect(transport);
  const call = (params, opts2) => version === 'v2' ? client.callTool(params, opts2) : client.callTool(params, undefined, opts2);
  return { transport, client, call, errors };
}

async function scenario(version, q) {
  const out = { version };
  let closed = false;
  const sentMethods = [];
  const callIds = {}; // tool name -> the request id of its last tools/call
  const answers = new Map(); // request id -> the error code of its answer, as it came in
  const events = waiter();
  const audio = []; const logs = []; const sdkLogs = [];
  const { transport, client, call, errors } = await connect(version, q, {}, (c, t) => {
    t.onframe = (dir, msg, n, enc) => {
      if (dir === 'out' && msg.method) sentMethods.push(msg.method);
      if (dir === 'out' && msg.method === 'tools/call') callIds[msg.params.name] = msg.id;
      if (dir === 'in' && msg.id !== undefined && msg.method === undefined) { answers.set(msg.id, msg.error ? msg.error.code : 0); events.poke(); }
      if (q.get('debug')) console.log(version, dir, enc, n, JSON.stringify(msg).slice(0, 300));
    };
    t.onaudio = (a) => { audio.push(a); events.poke(); };
    t.onlog = (l) => { logs.push(l); events.poke(); };
    if (version === 'v2') {
      c.setRequestHandler('sampling/createMessage', (req) => sampler(req.params.messages[0].content.text));
      c.setNotificationHandler('notifications/message', (n) => { sdkLogs.push(n.params); events.poke(); });
    } else {
      c.setRequestHandler(CreateMessageRequestSchema, (req) => sampler(req.params.messages[0].content.text));
      c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { sdkLogs.push(n.params); events.poke(); });
    }
  });
  const prevClose = transport.onclose;
  transport.onclose = () => { closed = true; if (prevClose) prevClose(); };
  out.encoding = transport.encoding;
  out.serverTransport = transport.serverTransport;

  at(version + ' tools/list');
  const tools = await client.listTools();
  out.tools = tools.tools.map((t) => t.name);

  at(version + ' echo');
  const echo = await client.callTool({ name: 'echo', arguments: { text: 'こんにちは from SDK ' + version } });
  out.echo = echo.content[0].text;

  // A stream past the inline limit: a resource_link, read through transport.stream().
  const size = Number(q.get(version === 'v2' ? 'size' : 'size1'));
  const t0 = performance.now();
  at(version + ' generate');
  const gen = await client.callTool({ name: 'generate', arguments: { bytes: size, sha256: true } });
  const link = gen.content.find((c) => c.type === 'resource_link');
  const bytes = await readAll(await transport.stream(link.uri));
  out.generate = { link: link.uri, bytes: bytes.length, sha256: await sha256(bytes), reported: gen.structuredContent.sha256, ms: Math.round(performance.now() - t0) };

  // A small binary stream inlined as a base64 blob.
  at(version + ' inline');
  const small = await client.callTool({ name: 'generate', arguments: { bytes: 1000, sha256: true } });
  const blob = small.content.find((c) => c.type === 'resource');
  const raw = fromBase64(blob.resource.blob);
  out.inline = { bytes: raw.length, sha256: await sha256(raw), reported: small.structuredContent.sha256 };

  const updates = [];
  const datagrams0 = transport.stats.datagramsReceived;
  at(version + ' progress');
  await call({ name: 'slow', arguments: { steps: 5, delayMs: 30 } }, { onprogress: (p) => updates.push(p) });
  out.progress = { updates: updates.map((p) => [p.progress, p.total]), datagrams: transport.stats.datagramsReceived - datagrams0 };

  // Cancel through the SDK's AbortSignal, once progress shows the call
  // running: the call rejects with the reason, and the server's -32800
  // reaches the transport (and goes no further: the SDK gave up on the id).
  const ac = new AbortController();
  let seen = 0;
  const opts = { signal: ac.signal, onprogress: () => { if (++seen === 2) ac.abort('the user pressed Stop'); } };
  at(version + ' cancel');
  const c = await within(10000, call({ name: 'slow', arguments: { steps: 2000, delayMs: 20 } }, opts));
  out.cancel = errorOf(c);
  const cancelledId = callIds.slow;
  out.cancel.answered = (await events.waitFor(() => answers.has(cancelledId), 5000)) ? answers.get(cancelledId) : null;

  // Streams that the server fails, on a session of their own (streamErrors).
  at(version + ' fail_midstream');
  Object.assign(out, await streamErrors(version, q));
  // resources/read of a stream's URI, answered by the transport.
  at(version + ' readResource');
  const n12 = Number(q.get('readSize'));
  const g12 = await client.callTool({ name: 'generate', arguments: { bytes: n12, sha256: true } });
  const l12 = g12.content.find((x) => x.type === 'resource_link');
  const rr = await within(20000, client.readResource({ uri: l12.uri }));
  if (rr.value) {
    const got = fromBase64(rr.value.contents[0].blob);
    out.readResource = { uri: rr.value.contents[0].uri, mimeType: rr.value.contents[0].mimeType, bytes: got.length, sha256: await sha256(got), reported: g12.structuredContent.sha256 };
  } else out.readResource = errorOf(rr);

  if (version === 'v2') {
    // A text stream past the inline limit: resources/read gives its text.
    at(version + ' readResource text');
    const f = await client.callTool({ name: 'read_file', arguments: { path: q.get('textFile') } });
    const fl = f.content.find((x) => x.type === 'resource_link');
    const tr = await within(20000, client.readResource({ uri: fl.uri }));
    if (tr.value) {
      const r0 = tr.value.contents[0];
      out.readText = { mimeType: r0.mimeType, hasBlob: r0.blob !== undefined, chars: r0.text.length, sha256: await sha256(new TextEncoder().encode(r0.text)) };
    } else out.readText = errorOf(tr);

    // Past readResourceLimit: the error says to stream it, and stream()
    // still gives every byte; the stream's bytes are counted once.
    at(version + ' readResource past its limit');
    const big = Number(q.get('bigSize'));
    const sb0 = transport.stats.streamBytes;
    const gb = await client.callTool({ name: 'generate', arguments: { bytes: big, sha256: true } });
    const lb = gb.content.find((x) => x.type === 'resource_link');
    out.tooLarge = errorOf(await within(20000, client.readResource({ uri: lb.uri })));
    const all = await readAll(await transport.stream(lb.uri));
    out.tooLarge.streamed = { bytes: all.length, sha256: await sha256(all), reported: gb.structuredContent.sha256, counted: transport.stats.streamBytes - sb0 };
  }

  // Audio and log datagrams.
  at(version + ' tone');
  const tone = await call({ name: 'tone', arguments: { ms: 400 } });
  const toneId = callIds.tone;
  await events.waitFor(() => audio.length >= tone.structuredContent.chunks, 2000);
  out.tone = { id: toneId, result: tone.structuredContent, chunks: audio.map((a) => ({ requestId: a.requestId, seq: a.seq, data: bytesToBase64(a.data) })),
    audioDatagrams: transport.stats.audioDatagrams, audioBytes: transport.stats.audioBytes };
  at(version + ' log');
  const lg = await call({ name: 'log', arguments: { level: 'warning', message: 'disk 91% full', count: 20 } });
  await events.waitFor(() => logs.length >= 20 && sdkLogs.length >= 20, 3000);
  out.log = { id: callIds.log, text: lg.content[0].text, events: logs, sdk: sdkLogs.length, logDatagrams: transport.stats.logDatagrams, datagramsSupported: transport.serverTransport.datagramsSupported };

  at(version + ' sampling');
  const s = await client.callTool({ name: 'ask_sampling', arguments: { prompt: 'what is MCP-Flow?' } });
  out.sampling = s.content.map((x) => x.text).join(' ');
  out.sent = [...sentMethods]; // the methods sent up to here: close() may cancel its unread stream's request

  // Nothing in flight but a result's stream that nobody read: close() gives
  // it up rather than wait for the server's drain (spec §7.2).
  at(version + ' unread, then close');
  const left = await client.callTool({ name: 'generate', arguments: { bytes: Number(q.get('leftSize')) } });
  out.leftUnread = left.content.filter((x) => x.type === 'resource_link').length;
  out.stats = { ...transport.stats };
  const tc = performance.now();
  await client.close();
  out.closeMs = performance.now() - tc;
  out.closed = closed;
  out.errors = errors;
  return out;
}

// streamErrors: a stream that the server resets after 2 MiB of it have come
// (v2 only), then one that it resets at once (before its header arrives, as
// a rule), each reported with $/streamError: each call fails (15 s is the hang guard). On
// a session of its own, the early reset last: in Deno (2.9.6) a stream
// reset before its WebTransport prefix was read ends the session's incoming
// streams (docs/INTEROP.md), which must not fail other checks;
// incomingError says whether it happened.
async function streamErrors(version, q) {
  const out = {};
  const ids = {};
  const { client, call, transport } = await connect(version, q, {}, (c, t) => {
    t.onframe = (dir, msg) => { if (dir === 'out' && msg.method === 'tools/call') ids[msg.params.name] = msg.id; };
  });
  if (version === 'v2') {
    out.failLate = errorOf(await within(15000, call({ name: 'fail_midstream', arguments: { bytes: 2 << 20 } })));
    out.failLate.id = ids.fail_midstream;
  }
  out.failMidstream = errorOf(await within(15000, call({ name: 'fail_midstream', arguments: { bytes: 1000 } })));
  out.failMidstream.id = ids.fail_midstream;
  out.failMidstream.incomingError = incomingError(transport);
  await client.close();
  return out;
}

// incomingError is the message of the transport's incomingStreamsError, or null.
function incomingError(transport) { return transport.incomingStreamsError ? transport.incomingStreamsError.message : null; }

// raw: a transport that inlines nothing; transport.stream() of a stream
// that the server fails errors at once, naming the request and tag.
async function raw(q) {
  const out = {};
  const { transport, client } = await connect('v2', q, { inlineStreams: false });
  // The late reset first: the early one may end Deno's incoming streams (streamErrors).
  const r2 = await client.callTool({ name: 'fail_midstream', arguments: { bytes: 2 << 20 } });
  out.late = errorOf(await within(15000, transport.stream(r2.content[0].uri).then(readAll)));
  out.late.uri = r2.content[0].uri;
  const r = await client.callTool({ name: 'fail_midstream', arguments: { bytes: 1000 } });
  const l = r.content.find((x) => x.type === 'resource_link');
  out.uri = l.uri;
  out.stream = errorOf(await within(15000, transport.stream(l.uri).then(readAll)));
  out.stream.incomingError = incomingError(transport);
  await client.close();
  return out;
}

// phantom: a ref/stream whose stream never comes fails the call with -32001
// once streamWait has passed (spec §5.3).
async function phantom(q) {
  const wait = 500;
  const { client } = await connect('v2', q, { streamWait: wait });
  const out = errorOf(await within(wait + 15000, client.callTool({ name: 'phantom_stream', arguments: {} })));
  out.streamWait = wait;
  await client.close();
  return out;
}

// unread: four 64 MiB streams of a result are never read; they hold the
// connection's flow-control window (the control stream's too) until the
// transport cancels them, unreadStreamTimeout after the handover. A 20 MB
// stream asked for next must come well before the server's 30 s stall
// timeout would free the window.
async function unread(q) {
  const out = { timeout: 1000 };
  const { transport, client } = await connect('v2', q, { unreadStreamTimeout: out.timeout });
  const f = await within(15000, client.callTool({ name: 'generate', arguments: { bytes: 64 << 20, streams: 4 } }));
  if (!f.value) throw new Error('generate of 4 streams of 64 MiB: ' + JSON.stringify(errorOf(f)));
  const links = f.value.content.filter((x) => x.type === 'resource_link');
  const handover = performance.now();
  out.links = links.length;
  const n = 20e6;
  const t0 = performance.now();
  const r = await within(15000, (async () => {
    const g = await client.callTool({ name: 'generate', arguments: { bytes: n, sha256: true } });
    const b = await readAll(await transport.stream(g.content[0].uri));
    return { bytes: b.length, sha256: await sha256(b), reported: g.structuredContent.sha256 };
  })());
  out.later = r.value ? { ...r.value, ms: Math.round(performance.now() - t0) } : errorOf(r);
  // Where the unread streams hold no window the later stream needs (Firefox
  // gives the connection a window larger than them), it comes before
  // unreadStreamTimeout has passed: ask again only once the transport has
  // released them all (or a second past the timeout, when it never does).
  const released = () => transport.stats.streamsReleased >= links.length;
  for (const end = handover + out.timeout + 1000; !released() && performance.now() < end;) await new Promise((r) => setTimeout(r, 20));
  out.againAfterMs = Math.round(performance.now() - handover);
  out.again = errorOf(await within(5000, transport.stream(links[0].uri)));
  out.released = transport.stats.streamsReleased;
  await client.close();
  return out;
}

async function badHash(q) {
  const transport = new WebTransportClientTransport(q.get('url'), { serverCertificateHashes: '00'.repeat(32) });
  const client = new ClientV2({ name: 'bad-hash', version: '0.1.0' });
  try {
    await client.connect(transport);
    return { error: null };
  } catch (e) {
    return { error: String(e && e.message) };
  }
}

async function run() {
  const q = new URLSearchParams(location.search);
  const only = q.get('only');
  const r = {};
  if (!only || only === 'v2') r.v2 = await scenario('v2', q);
  if (!only || only === 'v1') r.v1 = await scenario('v1', q);
  // Each of these on a session of its own: one that fails is reported, and the others run.
  const part = (name, f) => { at(name); return f(q).catch((e) => ({ fatal: String(e && e.stack || e) })); };
  if (!only || only === 'raw') r.raw = await part('raw', raw);
  if (!only || only === 'phantom') r.phantom = await part('phantom', phantom);
  if (!only || only === 'unread') r.unread = await part('unread', unread);
  if (!only) r.badHash = await badHash(q);
  return r;
}

run().then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e && e.stack || e), trail }; });
