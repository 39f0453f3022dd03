// peer.js is the end of one MCP-Flow session over a bare WebTransport, in
// a page (page.html) or in Deno (deno.mjs), written from the guide alone:
// JSON frames of a 4-byte big-endian length (guide §3), initialize, then
// $/shutdown from this side ("client") or from the server ("server": the
// page asks for it with the test's own method closetest/shutdown, and the
// server runs Server.Shutdown, as SIGTERM does). The page calls close()
// only with close=1 (the guide's receiver, after the server's $/shutdown):
// otherwise the session's end is the server's (spec §7.2 rule 4), and what
// `closed` did with it is the result. With mode "js" the same ends run
// through the js/ transport's dist (WebTransportClientTransport.close), as
// an app built on the SDK would.

const enc = new TextEncoder();
const dec = new TextDecoder();

function hexBytes(h) {
  const b = new Uint8Array(h.length / 2);
  for (let i = 0; i < b.length; i++) b[i] = parseInt(h.slice(2 * i, 2 * i + 2), 16);
  return b;
}

// settle waits up to ms for p and says what it did.
function settle(p, ms) {
  let timer;
  return Promise.race([
    p.then((value) => ({ state: 'resolved', value }), (e) => ({ state: 'rejected', error: String(e && e.message || e), name: e && e.name, source: e && e.source, streamErrorCode: e && e.streamErrorCode })),
    new Promise((r) => { timer = setTimeout(() => r({ state: 'pending' }), ms); }),
  ]).finally(() => clearTimeout(timer));
}

class Bare {
  constructor(wt, stream) {
    this.wt = wt;
    this.writer = stream.writable.getWriter();
    this.reader = stream.readable.getReader();
    this.buf = new Uint8Array(0);
    this.nextId = 1;
    this.pending = new Map();
    this.shutdownReceived = false;
    this.ended = new Promise((r) => { this.end = r; });
  }

  async write(msg) {
    const body = enc.encode(JSON.stringify(msg));
    const f = new Uint8Array(4 + body.length);
    new DataView(f.buffer).setUint32(0, body.length, false);
    f.set(body, 4);
    await this.writer.write(f);
  }

  async take(n) {
    while (this.buf.length < n) {
      const r = await this.reader.read();
      if (r.done) return null;
      const b = new Uint8Array(this.buf.length + r.value.length);
      b.set(this.buf); b.set(r.value, this.buf.length);
      this.buf = b;
    }
    const out = this.buf.slice(0, n);
    this.buf = this.buf.slice(n);
    return out;
  }

  async readLoop() {
    try {
      for (;;) {
        const h = await this.take(4);
        if (!h) break;
        const body = await this.take(new DataView(h.buffer).getUint32(0, false));
        const m = JSON.parse(dec.decode(body));
        if (m.method === '$/shutdown') this.shutdownReceived = true;
        else if (m.id !== undefined && this.pending.has(m.id)) { this.pending.get(m.id)(m); this.pending.delete(m.id); }
      }
      this.end('fin');
    } catch (e) {
      this.end('error: ' + (e && e.message || e));
    }
  }

  request(method, params) {
    const id = this.nextId++;
    const p = new Promise((r) => this.pending.set(id, r));
    return this.write({ jsonrpc: '2.0', id, method, params }).then(() => p);
  }
}

async function bare(q, who, wait) {
  const opts = { serverCertificateHashes: [{ algorithm: 'sha-256', value: hexBytes(q.get('hash')) }] };
  const wt = new WebTransport(q.get('url'), opts);
  wt.closed.catch(() => {});
  await wt.ready;
  const c = new Bare(wt, await wt.createBidirectionalStream());
  const init = c.write({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {
    protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'closetest', version: '0.1' },
    transport: { type: 'mcp-flow', version: '0.1', encodings: ['json'], datagrams: false } } });
  c.pending.set(0, () => {});
  await init;
  const first = await c.take(4);
  await c.take(new DataView(first.buffer).getUint32(0, false));
  c.readLoop();
  await c.write({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const t0 = Date.now();
  if (who === 'client') {
    await c.write({ jsonrpc: '2.0', method: '$/shutdown', params: { reason: 'closetest' } });
  } else {
    await c.request('closetest/shutdown', {});
  }
  const fin = await settle(c.ended, wait);
  // Our FIN once the server finished its side (the receiver's at once, the
  // sender's after its grace): then the server closes the session, or,
  // with close=1, we do, as the guide's receiver ("closes session").
  await c.writer.close().catch(() => {});
  if (q.get('close') === '1') wt.close({ closeCode: 0, reason: 'closetest: drained' });
  const closed = await settle(wt.closed, wait);
  return { fin: fin.value || fin.state, shutdownReceived: c.shutdownReceived, closed, ms: Date.now() - t0 };
}

async function viaTransport(q, who, wait) {
  const { WebTransportClientTransport } = await import(q.get('dist'));
  const t = new WebTransportClientTransport(new URL(q.get('url')), { serverCertificateHashes: [{ algorithm: 'sha-256', value: hexBytes(q.get('hash')) }] });
  const closedOnce = new Promise((r) => { t.onclose = r; });
  const answers = new Map();
  t.onmessage = (m) => { if (m.id !== undefined && answers.has(m.id)) answers.get(m.id)(m); };
  const call = (id, method, params) => {
    const p = new Promise((r) => answers.set(id, r));
    return t.send({ jsonrpc: '2.0', id, method, params }).then(() => p);
  };
  await t.start();
  const wt = t._wt;
  wt.closed.catch(() => {});
  await call(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'closetest', version: '0.1' } });
  await t.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const t0 = Date.now();
  if (who === 'client') {
    await t.close();
  } else {
    await call(1, 'closetest/shutdown', {});
    await settle(closedOnce, wait);
  }
  const closed = await settle(wt.closed, wait);
  return { closed, ms: Date.now() - t0 };
}

// run runs one end: q has url, hash, who (client|server), mode (bare|js),
// dist (the js/ transport's URL, for js) and wait (ms).
export async function run(q) {
  const wait = Number(q.get('wait') || 3000);
  const who = q.get('who');
  try {
    return await (q.get('mode') === 'js' ? viaTransport(q, who, wait) : bare(q, who, wait));
  } catch (e) {
    return { error: String(e && e.stack || e) };
  }
}
