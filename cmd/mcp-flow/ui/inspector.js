// The MCP-Flow inspector: a page served by `mcp-flow ui` that connects to an
// MCP-Flow server with @mcp-flow/webtransport (js/, bundled as mcpflow.js),
// lists the tools with argument forms, calls them, and shows results,
// progress, execution streams (bytes, rate, SHA-256), datagram counters
// (progress, audio, log), the server's log messages and the frame log. A
// call's Cancel sends $/cancel, whose -32800 answer ends the call box as
// cancelled. A server that checks access tokens (docs/spec.md §9.1) takes
// the one in the token field, sent as the transport places it.
import { WebTransportClientTransport } from './mcpflow.js';

const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...kids) => {
  const e = Object.assign(document.createElement(tag), props);
  for (const k of kids) e.append(k);
  return e;
};
const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
function size(n) {
  const u = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return i ? n.toFixed(1) + ' ' + u[i] : n + ' B';
}

let t = null; // the transport
let nextId = 0;
const pending = new Map(); // id -> {resolve, onprogress}

function status(text, cls) { $('status').textContent = text; $('status').className = cls || ''; }

function summary(msg) {
  const m = Array.isArray(msg) ? msg[0] : msg;
  const what = m.method ? m.method : (m.error ? `error ${m.error.code}` : 'result');
  const id = m.id !== undefined ? ` #${m.id}` : '';
  let s = JSON.stringify(m.params || m.result || m.error || {});
  if (s.length > 90) s = s.slice(0, 90) + '…';
  return `${what}${id} ${s}`;
}

function logFrame(dir, msg, bytes, enc) {
  const row = el('tr', {}, el('td', { textContent: dir === 'in' ? '←' : '→' }), el('td', { textContent: enc }),
    el('td', { textContent: String(bytes) }), el('td', { textContent: summary(msg) }));
  $('frames').tBodies[0].prepend(row);
  counters();
}

// logLine adds one of the server's log messages (notifications/message,
// by log datagram or on the control stream) to the log list, newest first.
function logLine(l) {
  const data = typeof l.data === 'string' ? l.data : JSON.stringify(l.data);
  const li = el('li', { className: 'log-' + l.level },
    el('b', { textContent: l.level }), ` ${l.logger || ''}${l.requestId !== undefined ? ' #' + l.requestId : ''} (${l.datagram ? 'datagram' : 'control stream'}): `, data);
  $('logs').prepend(li);
  counters();
}

// Counters redraw at most once a frame: audio datagrams come 50 a second.
let countersQueued = false;
function countersSoon() {
  if (countersQueued) return;
  countersQueued = true;
  requestAnimationFrame(() => { countersQueued = false; counters(); });
}

function counters() {
  if (!t) return;
  const s = t.stats;
  const rows = [['encoding', t.encoding], ['frames out / in', `${s.framesSent} / ${s.framesReceived}`],
    ['bytes out / in', `${size(s.bytesSent)} / ${size(s.bytesReceived)}`], ['datagrams received', s.datagramsReceived],
    ['progress delivered / stale', `${s.progressDelivered} / ${s.progressStale}`], ['audio datagrams', s.audioDatagrams],
    ['audio bytes', size(s.audioBytes)], ['log datagrams', s.logDatagrams], ['execution streams', s.streamsReceived],
    ['stream bytes', size(s.streamBytes)], ['streams failed / released', `${s.streamsFailed} / ${s.streamsReleased}`],
    ['max streams', t.serverTransport ? t.serverTransport.maxConcurrentStreams : '']];
  $('counters').replaceChildren(...rows.map(([k, v]) => el('tr', {}, el('th', { textContent: k }), el('td', { textContent: String(v) }))));
}

// request sends one JSON-RPC request of the page's own (the inspector
// speaks JSON-RPC itself rather than through an SDK client, to show every
// message as it is).
function request(method, params, onprogress) {
  const id = nextId++;
  if (onprogress) params = { ...params, _meta: { progressToken: id } };
  return { id, done: new Promise((resolve) => { pending.set(id, { resolve, onprogress }); t.send({ jsonrpc: '2.0', id, method, params }); }) };
}

function onmessage(m) {
  if (m.method === 'notifications/progress') {
    const p = pending.get(Number(m.params.progressToken));
    if (p && p.onprogress) p.onprogress(m.params);
  } else if (m.method === 'sampling/createMessage' && m.id !== undefined) {
    const text = m.params.messages.map((x) => x.content && x.content.text).join(' ');
    t.send({ jsonrpc: '2.0', id: m.id, result: { role: 'assistant', model: 'mcp-flow-inspector', content: { type: 'text', text: 'inspector echo: ' + text } } });
  } else if (m.method !== undefined && m.id !== undefined) {
    t.send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'the inspector does not handle ' + m.method } });
  } else if (m.id !== undefined && pending.has(Number(m.id))) {
    const p = pending.get(Number(m.id));
    pending.delete(Number(m.id));
    p.resolve(m);
  }
  counters();
}

async function connect(ev) {
  if (ev) ev.preventDefault();
  status('connecting…');
  // The access token (docs/spec.md §9.1) is read from its field at each
  // connect and kept nowhere else: not in the page's URL, not in storage.
  const token = $('token').value.trim() || undefined;
  t = new WebTransportClientTransport($('url').value, { serverCertificateHashes: $('hash').value || undefined, encodings: $('enc').value.split(','), inlineStreams: false, token });
  t.onframe = logFrame;
  t.onmessage = onmessage;
  t.ondatagram = () => countersSoon();
  t.onlog = logLine;
  t.onclose = () => { status('session closed'); $('shutdownBtn').disabled = true; $('connectBtn').disabled = false; };
  t.onerror = (e) => status(String(e.message || e), 'err');
  try {
    await t.start();
    const init = await request('initialize', { protocolVersion: '2025-11-25', capabilities: { sampling: {} }, clientInfo: { name: 'mcp-flow-inspector', version: '0.1' } }).done;
    if (init.error) throw new Error(init.error.message);
    await t.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const r = init.result;
    const auth = t.tokenPlacement ? `, access token in the ${t.tokenPlacement}` : '';
    status(`connected to ${r.serverInfo.name} ${r.serverInfo.version}, MCP ${r.protocolVersion}, encoding ${t.encoding}, datagrams ${r.transport.datagramsSupported}${auth}`, 'ok');
    $('connectBtn').disabled = true; $('shutdownBtn').disabled = false;
    await listTools();
  } catch (e) {
    status(String(e.message || e), 'err');
  }
  counters();
}

async function listTools() {
  const r = await request('tools/list', {}).done;
  const tools = (r.result && r.result.tools) || [];
  $('tools').replaceChildren(...tools.map(toolForm));
}

function toolForm(tool) {
  const props = (tool.inputSchema && tool.inputSchema.properties) || {};
  const required = new Set((tool.inputSchema && tool.inputSchema.required) || []);
  const inputs = Object.entries(props).map(([name, p]) => {
    const input = el('input', { name, placeholder: p.type || '' });
    if (p.type === 'boolean') input.type = 'checkbox';
    input.dataset.type = p.type || 'string';
    return el('label', {}, name + (required.has(name) ? '*' : '') + ' ', input);
  });
  const form = el('form', { className: 'tool', id: 'tool-' + tool.name }, el('b', { textContent: tool.name }), el('p', { textContent: tool.description || '' }), ...inputs, el('button', { type: 'submit', textContent: 'Call' }));
  form.onsubmit = (ev) => {
    ev.preventDefault();
    const args = {};
    for (const input of form.querySelectorAll('input')) {
      const ty = input.dataset.type;
      if (ty === 'boolean') { if (input.checked) args[input.name] = true; continue; }
      if (input.value === '') continue;
      args[input.name] = ty === 'integer' || ty === 'number' ? Number(input.value) : input.value;
    }
    callTool(tool.name, args);
  };
  return form;
}

async function callTool(name, args) {
  const bar = el('div');
  const out = el('pre');
  const streams = el('div');
  const state = el('span', { textContent: 'running' });
  const cancel = el('button', { textContent: 'Cancel', type: 'button' });
  const box = el('div', { className: 'call' }, el('div', { className: 'head' }, el('b', { textContent: `${name} ${JSON.stringify(args)}` }), state, cancel), el('div', { className: 'bar' }, bar), streams, out);
  $('calls').prepend(box);
  // sized: the streams' size, when the server tells it as progress in bytes
  // (spec §6.3), and the bytes read of them so far, for the share and ETA.
  const sized = { total: 0, n: 0 };
  const c = request('tools/call', { name, arguments: args }, (p) => {
    if (p._meta && p._meta['mcp-flow/unit'] === 'bytes') { sized.total = p.total; return; }
    bar.style.width = p.total ? `${Math.min(100, (100 * p.progress) / p.total)}%` : '100%';
    state.textContent = `progress ${p.progress}${p.total ? ' / ' + p.total : ''}${p.message ? ' ' + p.message : ''}`;
  });
  box.dataset.id = c.id;
  // $/cancel (spec §7.1), not MCP's notifications/cancelled: the server
  // answers it with -32800, which ends this call's promise.
  cancel.onclick = () => { cancel.disabled = true; t.send({ jsonrpc: '2.0', method: '$/cancel', params: { requestId: c.id, reason: 'cancelled in the inspector' } }); };
  const r = await c.done;
  cancel.disabled = true;
  if (r.error && r.error.code === -32800) { state.textContent = `cancelled: ${r.error.message}`; state.className = 'err'; box.dataset.done = 'cancelled'; counters(); return; }
  if (r.error) { state.textContent = `error ${r.error.code}: ${r.error.message}`; state.className = 'err'; box.dataset.done = 'error'; return; }
  state.textContent = r.result.isError ? 'tool error' : 'done';
  state.className = r.result.isError ? 'err' : 'ok';
  out.textContent = JSON.stringify(r.result, null, 1);
  for (const block of r.result.content || []) {
    if (block.type === 'resource_link' && block.uri.startsWith('mcp-flow://stream/')) await readStream(block, streams, sized);
  }
  box.dataset.done = 'ok';
  counters();
}

// readStream reads an execution stream through transport.stream(),
// showing bytes and rate as they come (with the share of the call's streams
// and the ETA when sized.total is known), then the SHA-256.
async function readStream(block, into, sized) {
  const line = el('div', { className: 'stream', textContent: `${block.name}: waiting` });
  into.append(line);
  const reader = (await t.stream(block.uri)).getReader();
  const chunks = [];
  let n = 0;
  const t0 = performance.now();
  const show = (extra) => {
    const s = Math.max((performance.now() - t0) / 1000, 1e-3);
    let of = '';
    if (sized.total > 0 && sized.n + n <= sized.total) {
      const left = (sized.total - sized.n - n) / Math.max(n / s, 1);
      of = `, ${size(sized.n + n)} of ${size(sized.total)} (${Math.round((100 * (sized.n + n)) / sized.total)}%)${left > 0 ? `, ETA ${Math.ceil(left)} s` : ''}`;
    }
    line.textContent = `${block.name} (${block.mimeType}): ${size(n)} at ${size(n / s)}/s${of}${extra}`;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      chunks.push(value); n += value.length;
      show('');
    }
  } catch (e) {
    line.textContent = `${block.name}: failed after ${size(n)}: ${e.message}`;
    line.className = 'stream err';
    return;
  }
  const all = new Uint8Array(n);
  let off = 0;
  for (const c of chunks) { all.set(c, off); off += c.length; }
  const sum = hex(new Uint8Array(await crypto.subtle.digest('SHA-256', all)));
  show(`, SHA-256 ${sum}`);
  sized.n += n;
  line.dataset.bytes = n; line.dataset.sha256 = sum;
  line.className = 'stream ok';
}

$('connect').onsubmit = connect;
$('shutdownBtn').onclick = async () => { status('shutting down…'); await t.close(); };

const cfg = await fetch('config.json').then((r) => r.json());
$('url').value = cfg.url;
$('hash').value = cfg.certHash || '';
if (cfg.encodings) $('enc').value = cfg.encodings;
connect();
