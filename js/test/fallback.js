// The fallback's browser test (issue 26): the real MCP SDK clients, v2 and
// v1, over WebTransportClientTransport with the SDK's own
// StreamableHTTPClientTransport as its fallback, against mcp-flow-server
// behind lossrelay origins: one whose UDP is blocked (the transport must
// fall back, and every call goes over Streamable HTTP), one with no UDP
// listener at all (WebTransport fails at once), and one whose UDP path is
// slow but works (the transport must keep MCP-Flow). The findings go to
// window.__result for js/fallback_test.go to judge.
import { Client as ClientV2, StreamableHTTPClientTransport as HTTPv2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HTTPv1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebTransportClientTransport } from '../src/index.js';

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

// within settles with what p settles with, or {timeout} once ms have passed.
function within(ms, p) {
  let timer;
  const t0 = performance.now();
  const done = (r) => { clearTimeout(timer); return { ...r, ms: Math.round(performance.now() - t0) }; };
  return Promise.race([
    p.then((value) => done({ value }), (e) => done({ error: e })),
    new Promise((resolve) => { timer = setTimeout(() => resolve({ timeout: true, ms }), ms); }),
  ]);
}

// step runs f within ms and records what it gave, or its error or timeout,
// under out[name]; it returns f's value (undefined when it failed).
async function step(out, name, ms, f) {
  at(name);
  const r = await within(ms, f());
  if (r.value !== undefined && !r.error && !r.timeout) { out[name] = { ...r.value, ms: r.ms }; return r.value; }
  out[name] = r.timeout ? { timeout: true, ms: r.ms } : { error: `${r.error && r.error.name}: ${r.error && r.error.message}`, ms: r.ms };
  return undefined;
}

const trail = [];
const at = (what) => trail.push(Math.round(performance.now()) + ' ' + what);

// connect makes an SDK client of version over a transport to url with
// the SDK's own Streamable HTTP transport as its fallback; v2's client
// negotiates its era ('auto': 2026-07-28 when the server has it) when
// modern is set.
async function connect(version, q, url, opts = {}, modern = false) {
  const choices = [];
  const transport = new WebTransportClientTransport(url, {
    serverCertificateHashes: q.get('hash'),
    fallback: version === 'v2' ? HTTPv2 : HTTPv1,
    ...opts,
  });
  transport.ontransport = (c) => choices.push(c);
  const info = { name: 'mcp-flow-fallback-test-' + version, version: '0.1.0' };
  const client = version === 'v2' ? new ClientV2(info, modern ? { versionNegotiation: { mode: 'auto' } } : undefined) : new ClientV1(info);
  const errors = [];
  client.onerror = (e) => errors.push(String(e && e.message || e));
  const call = (params, o) => version === 'v2' ? client.callTool(params, o) : client.callTool(params, undefined, o);
  const t0 = performance.now();
  const c = await within(20000, client.connect(transport));
  const connectMs = Math.round(performance.now() - t0);
  return { transport, client, call, errors, choices, connectMs, connectError: c.error ? String(c.error.message || c.error) : c.timeout ? `timeout after ${c.ms} ms` : undefined };
}

// forced is the transport option of the test's knob (unset: 'auto').
function forced(q) { return q.get('force') ? { transport: q.get('force') } : {}; }

// blocked: everything the SDK does, through the fallback.
async function blocked(version, q) {
  const out = { version };
  const opts = forced(q);
  if (q.get('after')) opts.fallbackAfter = Number(q.get('after'));
  const { transport, client, call, errors, choices, connectMs, connectError } = await connect(version, q, q.get('blocked'), opts);
  out.choices = choices; out.choice = transport.choice; out.connectMs = connectMs; out.connectError = connectError;
  out.sessionId = transport.sessionId !== undefined;
  if (connectError) return out;

  await step(out, 'tools', 5000, async () => ({ names: (await client.listTools()).tools.map((t) => t.name) }));
  await step(out, 'echo', 5000, async () => ({ text: (await call({ name: 'echo', arguments: { text: 'hi' } })).content[0].text }));

  const updates = [];
  await step(out, 'progress', 10000, async () => {
    await call({ name: 'slow', arguments: { steps: 5, delayMs: 30 } }, { onprogress: (p) => updates.push([p.progress, p.total]) });
    return { updates };
  });

  // Cancel through the SDK's AbortSignal once progress shows the call running.
  const ac = new AbortController();
  let seen = 0;
  at(version + ' cancel');
  const c = await within(10000, call({ name: 'slow', arguments: { steps: 2000, delayMs: 20 } },
    { signal: ac.signal, onprogress: () => { if (++seen === 2) ac.abort('the user pressed Stop'); } }));
  out.cancel = c.timeout ? { timeout: true, ms: c.ms } : { error: c.error ? String(c.error && c.error.message || c.error) : null, ms: c.ms, progressSeen: seen };
  // A call after the cancel: the session goes on, and whatever the server
  // sent for the cancelled call has arrived (or never will).
  await step(out, 'afterCancel', 5000, async () => ({ text: (await call({ name: 'echo', arguments: { text: 'after' } })).content[0].text }));

  // A stream within the server's HTTP inline limit: a resource blob.
  const n = Number(q.get('inline'));
  await step(out, 'inline', 15000, async () => {
    const r = await call({ name: 'generate', arguments: { bytes: n, sha256: true } });
    const b = r.content.find((x) => x.type === 'resource');
    const raw = fromBase64(b.resource.blob);
    return { uri: b.resource.uri, bytes: raw.length, sha256: await sha256(raw), reported: r.structuredContent.sha256 };
  });

  if (version === 'v2') {
    // Past it: a resource_link to a download on the server's origin, which
    // transport.stream() fetches; an mcp-flow://stream/ uri it refuses.
    const big = Number(q.get('download'));
    await step(out, 'download', 20000, async () => {
      const r = await call({ name: 'generate', arguments: { bytes: big, sha256: true } });
      const l = r.content.find((x) => x.type === 'resource_link');
      const b = await readAll(await transport.stream(l.uri));
      return { uri: l.uri, bytes: b.length, sha256: await sha256(b), reported: r.structuredContent.sha256 };
    });
    const s = await within(2000, transport.stream('mcp-flow://stream/1/1'));
    out.streamURI = { error: s.error ? String(s.error.message) : null };
  }

  out.errors = errors;
  const tc = performance.now();
  let closed = false;
  const prev = transport.onclose;
  transport.onclose = () => { closed = true; if (prev) prev(); };
  await within(5000, client.close());
  out.closeMs = Math.round(performance.now() - tc);
  out.closed = closed;
  return out;
}

// modern: SDK v2 in the 2026-07-28 era (stateless requests, each on its
// own HTTP stream: the fallback's hasPerRequestStream) through the fallback:
// echo, progress, and a cancel, which the SDK makes by aborting the
// request's stream; and a subscriptions/listen that hears toggle's
// tools/list_changed.
async function modern(q) {
  const out = { version: 'v2' };
  const { transport, client, call, errors, choices, connectMs, connectError } = await connect('v2', q, q.get('blocked'), forced(q), true);
  out.choices = choices; out.choice = transport.choice; out.connectMs = connectMs; out.connectError = connectError;
  if (connectError) return out;
  out.protocolVersion = client.getNegotiatedProtocolVersion();
  out.perRequestStream = transport.hasPerRequestStream === true;
  await step(out, 'echo', 5000, async () => ({ text: (await call({ name: 'echo', arguments: { text: 'hi' } })).content[0].text }));
  const updates = [];
  await step(out, 'progress', 10000, async () => {
    await call({ name: 'slow', arguments: { steps: 5, delayMs: 30 } }, { onprogress: (p) => updates.push([p.progress, p.total]) });
    return { updates };
  });
  const ac = new AbortController();
  let seen = 0;
  const c = await within(10000, call({ name: 'slow', arguments: { steps: 2000, delayMs: 20 } },
    { signal: ac.signal, onprogress: () => { if (++seen === 2) ac.abort('the user pressed Stop'); } }));
  out.cancel = c.timeout ? { timeout: true, ms: c.ms } : { error: c.error ? String(c.error && c.error.message || c.error) : null, ms: c.ms, progressSeen: seen };
  await step(out, 'afterCancel', 5000, async () => ({ text: (await call({ name: 'echo', arguments: { text: 'after' } })).content[0].text }));
  // subscriptions/listen held open over the fallback (its own POST's SSE
  // stream).
  await listenStep(out, client, call);
  out.errors = errors;
  await within(5000, client.close());
  return out;
}

// listenStep opens a subscriptions/listen for tools/list_changed, calls
// toggle and waits for the change (spec §11.7).
async function listenStep(out, client, call) {
  await step(out, 'listen', 10000, async () => {
    let heard;
    const changed = new Promise((res) => { heard = res; });
    client.setNotificationHandler('notifications/tools/list_changed', (n) => heard(n));
    const sub = await client.listen({ toolsListChanged: true }, { timeout: 10000 });
    try {
      const toggled = (await call({ name: 'toggle', arguments: {} })).content[0].text;
      const n = await changed;
      return { honored: sub.honoredFilter, method: n.method, toggled };
    } finally {
      await sub.close();
    }
  });
}

// direct: SDK v2 in the 2026-07-28 era over MCP-Flow itself (the slow
// origin, whose UDP gets through): the transport sends the SDK's string id
// of subscriptions/listen as an integer of its own and puts it back, and
// the subscription hears toggle's tools/list_changed; then echo.
async function direct(q) {
  const out = { version: 'v2' };
  const { transport, client, call, errors, choices, connectMs, connectError } = await connect('v2', q, q.get('slow'), { transport: 'mcp-flow' }, true);
  out.choices = choices; out.choice = transport.choice; out.connectMs = connectMs; out.connectError = connectError;
  if (connectError) return out;
  out.protocolVersion = client.getNegotiatedProtocolVersion();
  await listenStep(out, client, call);
  await step(out, 'echo', 5000, async () => ({ text: (await call({ name: 'echo', arguments: { text: 'hi' } })).content[0].text }));
  out.errors = errors;
  await within(5000, client.close());
  return out;
}

// FakeHTTP is a fallback Transport with a scripted server: it answers
// initialize, starts each tools/call with one progress update, and sends
// one more 10 ms after the SDK cancels it (as a server may, the cancel and
// the update crossing on the wire).
class FakeHTTP {
  constructor() { this.late = 0; }
  async start() {}
  async close() { if (this.onclose) this.onclose(); }
  async send(m) {
    const deliver = (msg) => { if (this.onmessage) this.onmessage(msg); };
    if (m.method === 'initialize') {
      setTimeout(() => deliver({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'fake', version: '0' } } }));
    } else if (m.method === 'tools/call') {
      this.token = m.params._meta && m.params._meta.progressToken;
      setTimeout(() => deliver({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: this.token, progress: 1, total: 10 } }));
    } else if (m.method === 'notifications/cancelled') {
      setTimeout(() => { this.late++; deliver({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: this.token, progress: 2, total: 10 } }); }, 10);
    }
  }
}

// late: the fallback forced, given by a factory; a progress update that
// arrives after the SDK cancelled its call stops in the transport (SDK v1
// reports one for a token it has forgotten as an error).
async function late() {
  const fake = new FakeHTTP();
  const transport = new WebTransportClientTransport('https://127.0.0.1:1/mcp', { transport: 'streamable-http', fallback: () => fake });
  const client = new ClientV1({ name: 'late', version: '0' });
  const errors = [];
  client.onerror = (e) => errors.push(String(e && e.message || e));
  await client.connect(transport);
  const ac = new AbortController();
  const r = await within(2000, client.callTool({ name: 'slow', arguments: {} }, undefined, { signal: ac.signal, onprogress: () => ac.abort('stop') }));
  await new Promise((res) => setTimeout(res, 50));
  await client.close();
  return { choice: transport.choice, cancelled: r.error ? String(r.error.message || r.error) : null, lateSent: fake.late, errors };
}

// quick: connect, echo and close; what was chosen.
async function quick(version, q, url, opts) {
  const out = { version };
  const { transport, client, call, choices, connectMs, connectError } = await connect(version, q, url, opts);
  out.choices = choices; out.choice = transport.choice; out.connectMs = connectMs; out.connectError = connectError;
  if (connectError) return out;
  await step(out, 'echo', 5000, async () => ({ text: (await call({ name: 'echo', arguments: { text: 'hi' } })).content[0].text }));
  out.encoding = transport.encoding;
  out.serverTransport = transport.serverTransport;
  await within(5000, client.close());
  return out;
}

async function run() {
  const q = new URLSearchParams(location.search);
  const only = q.get('only');
  const r = {};
  const opts = forced(q);
  if (q.get('after')) opts.fallbackAfter = Number(q.get('after'));
  if (!only || only === 'blocked') { r.blockedV2 = await blocked('v2', q); r.blockedV1 = await blocked('v1', q); }
  if (!only || only === 'modern') { at('modern'); r.modern = await modern(q); }
  if (!only || only === 'direct') { at('direct'); r.direct = await direct(q); }
  if (!only || only === 'late') { at('late'); r.late = await late(); }
  if (!only || only === 'refused') { at('refused'); r.refused = await quick('v2', q, q.get('refused'), opts); }
  if (!only || only === 'slow') { at('slow'); r.slow = await quick('v2', q, q.get('slow'), opts); }
  r.trail = trail;
  return r;
}

run().then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e && e.stack || e), trail }; });
