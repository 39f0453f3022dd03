// The package's browser test: the real MCP SDK clients, v2
// (@modelcontextprotocol/client) and v1 (@modelcontextprotocol/sdk), over
// WebTransportClientTransport against mcp-flow-server's test tools. The
// findings go to window.__result for js/js_test.go to judge.
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { WebTransportClientTransport } from '../src/index.js';

function hex(bytes) { return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(''); }

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

const sampler = (prompt) => ({ role: 'assistant', content: { type: 'text', text: 'the browser answers: ' + prompt }, model: 'browser-handler' });

const trail = [];
const at = (what) => trail.push(Math.round(performance.now()) + ' ' + what);

async function scenario(version, q) {
  const out = { version };
  const transport = new WebTransportClientTransport(q.get('url'), { serverCertificateHashes: q.get('hash'), encodings: ['cbor', 'json'] });
  let closed = false;
  const sentMethods = [];
  transport.onframe = (dir, msg, n, enc) => {
    if (dir === 'out' && msg.method) sentMethods.push(msg.method);
    if (q.get('debug')) console.log(version, dir, enc, n, JSON.stringify(msg).slice(0, 300));
  };
  const info = { name: 'mcp-flow-js-test-' + version, version: '0.1.0' };
  const caps = { capabilities: { sampling: {} } };
  const client = version === 'v2' ? new ClientV2(info, caps) : new ClientV1(info, caps);
  if (version === 'v2') client.setRequestHandler('sampling/createMessage', (req) => sampler(req.params.messages[0].content.text));
  else client.setRequestHandler(CreateMessageRequestSchema, (req) => sampler(req.params.messages[0].content.text));
  await client.connect(transport);
  const prevClose = transport.onclose;
  transport.onclose = () => { closed = true; if (prevClose) prevClose(); };
  const call = (params, opts) => version === 'v2' ? client.callTool(params, opts) : client.callTool(params, undefined, opts);
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
  out.generate = { link: link.uri, bytes: bytes.length, sha256: hex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))),
    reported: gen.structuredContent.sha256, ms: Math.round(performance.now() - t0) };

  // A small binary stream inlined as a base64 blob.
  at(version + ' inline');
  const small = await client.callTool({ name: 'generate', arguments: { bytes: 1000, sha256: true } });
  const blob = small.content.find((c) => c.type === 'resource');
  const raw = Uint8Array.from(atob(blob.resource.blob), (c) => c.charCodeAt(0));
  out.inline = { bytes: raw.length, sha256: hex(new Uint8Array(await crypto.subtle.digest('SHA-256', raw))), reported: small.structuredContent.sha256 };

  const updates = [];
  const datagrams0 = transport.stats.datagramsReceived;
  at(version + ' progress');
  await call({ name: 'slow', arguments: { steps: 5, delayMs: 30 } }, { onprogress: (p) => updates.push(p) });
  out.progress = { updates: updates.map((p) => [p.progress, p.total]), datagrams: transport.stats.datagramsReceived - datagrams0 };

  // Cancel through the SDK's AbortSignal, once progress shows the call running.
  const ac = new AbortController();
  let seen = 0;
  const opts = { signal: ac.signal, onprogress: () => { if (++seen === 2) ac.abort('the user pressed Stop'); } };
  at(version + ' cancel');
  const t1 = performance.now();
  try {
    await call({ name: 'slow', arguments: { steps: 2000, delayMs: 20 } }, opts);
    out.cancel = { error: null };
  } catch (e) {
    out.cancel = { error: String(e && e.name) + ': ' + String(e && e.message), ms: Math.round(performance.now() - t1) };
  }

  at(version + ' sampling');
  const s = await client.callTool({ name: 'ask_sampling', arguments: { prompt: 'what is MCP-Flow?' } });
  out.sampling = s.content.map((c) => c.text).join(' ');
  out.sent = sentMethods;

  out.stats = { ...transport.stats };
  at(version + ' close');
  await client.close();
  out.closed = closed;
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
  if (!only) r.badHash = await badHash(q);
  return r;
}

run().then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e && e.stack || e), trail }; });
