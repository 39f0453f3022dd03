// The browser test scenario: it runs against mcp-flow-server and leaves its
// findings in window.__result for the driver to check.
import { Client } from './mcpflow.js';

function hex(bytes) { return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(''); }
function unhex(s) { return Uint8Array.from(s.match(/../g), (h) => parseInt(h, 16)); }

async function run() {
  const q = new URLSearchParams(location.search);
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

  const closed = await c.shutdown();
  step('shutdown', { ...closed, protocolErrors: c.protocolErrors });
  return out;
}

run().then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e && e.stack || e) }; });
