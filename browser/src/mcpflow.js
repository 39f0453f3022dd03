// An MCP-Flow 0.1 client for the browser, written from the MCP-Flow guide:
// WebTransport session, control stream of 4-byte big-endian length-prefixed
// frames, initialize in JSON, then the negotiated encoding (JSON or CBOR),
// execution streams with an 8-byte header, datagrams with a 6-byte header,
// $/cancel and $/shutdown. It shares no code with the Go implementation:
// its encodings are codec.js (the platform's JSON, cbor-x) and its byte
// layouts wire.js, both held to testdata/vectors (browser/TestVectors).
import { decodeMessage, decodeValue, encodeMessage } from './codec.js';
import { CHANNEL, WireError, encodeFrame, frameLength, parseDatagram, parseStreamHeader } from './wire.js';

export { CHANNEL };

function concat(chunks, total) {
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) { out.set(c, off); off += c.length; }
  return out;
}

// ByteReader reads exact byte counts from a ReadableStream of Uint8Array.
class ByteReader {
  constructor(readable) { this.reader = readable.getReader(); this.buf = new Uint8Array(0); this.done = false; }
  async fill(n) {
    const chunks = [this.buf]; let total = this.buf.length;
    while (total < n) {
      const { value, done } = await this.reader.read();
      if (done) { this.done = true; break; }
      chunks.push(value); total += value.length;
    }
    this.buf = concat(chunks, total);
    return total >= n;
  }
  async readExact(n) {
    if (!(await this.fill(n))) return null;
    const out = this.buf.slice(0, n);
    this.buf = this.buf.slice(n);
    return out;
  }
  // readAll returns everything up to the end of the stream; it throws if the
  // stream was reset, so a truncated payload is never taken as whole.
  async readAll() {
    const chunks = [this.buf]; let total = this.buf.length;
    for (;;) {
      const { value, done } = await this.reader.read();
      if (done) break;
      chunks.push(value); total += value.length;
    }
    this.buf = new Uint8Array(0);
    return concat(chunks, total);
  }
}

export class Client {
  constructor(url, { certHash, encodings = ['cbor', 'json'], datagrams = true } = {}) {
    this.url = url; this.certHash = certHash; this.encodings = encodings; this.wantDatagrams = datagrams;
    this.encoding = 'json'; this.nextId = 1; this.pending = new Map(); this.streams = new Map();
    this.streamWaiters = new Map(); this.progress = new Map(); this.log = [];
    this.shutdownReceived = false; this.protocolErrors = [];
  }

  encode(msg) { return encodeMessage(this.encoding, msg); }
  decode(bytes) { return decodeMessage(this.encoding, bytes); }

  async connect() {
    const opts = {};
    if (this.certHash) opts.serverCertificateHashes = [{ algorithm: 'sha-256', value: this.certHash }];
    this.wt = new WebTransport(this.url, opts);
    await this.wt.ready;
    const ctrl = await this.wt.createBidirectionalStream();
    this.writer = ctrl.writable.getWriter();
    this.reader = new ByteReader(ctrl.readable);
    this.streamsLoop();
    this.datagramLoop();
  }

  async writeFrame(bytes) { await this.writer.write(encodeFrame(bytes)); }

  // readFrame returns the next frame's payload, null at the end of the
  // stream; a zero-length frame is noted and skipped (spec §3.1), a frame
  // over the limit throws.
  async readFrame() {
    for (;;) {
      const hdr = await this.reader.readExact(4);
      if (!hdr) return null;
      try {
        return await this.reader.readExact(frameLength(hdr));
      } catch (e) {
        if (!(e instanceof WireError) || e.kind !== 'zero length') throw e;
        this.protocolErrors.push({ code: -32600, message: 'control frame of length 0' });
      }
    }
  }

  // initialize runs the handshake: JSON request, JSON result, then the switch.
  async initialize() {
    const id = this.nextId++;
    const req = { jsonrpc: '2.0', id, method: 'initialize', params: {
      protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'browser-peer', version: '0.1' },
      transport: { type: 'mcp-flow', version: '0.1', encodings: this.encodings, datagrams: this.wantDatagrams } } };
    this.initializeFrame = encodeMessage('json', req);
    await this.writeFrame(this.initializeFrame);
    const frame = await this.readFrame();
    const res = decodeMessage('json', frame);
    if (res.error) throw new Error('initialize: ' + res.error.message);
    this.transport = res.result.transport;
    this.encoding = this.transport.encoding;
    this.readLoop();
    await this.notify('notifications/initialized');
    return res.result;
  }

  async readLoop() {
    for (;;) {
      let frame;
      try { frame = await this.readFrame(); } catch (e) { break; }
      if (!frame) break;
      const msg = this.decode(frame);
      for (const m of Array.isArray(msg) ? msg : [msg]) this.dispatch(m);
    }
    this.controlClosed = true;
    if (this.onControlClosed) this.onControlClosed();
  }

  dispatch(m) {
    if (m.method === '$/shutdown') { this.shutdownReceived = true; return; }
    if (m.method === 'notifications/progress') {
      const cb = this.progress.get(Number(m.params.progressToken));
      if (cb) cb({ via: 'control', ...m.params });
      return;
    }
    if (m.method) { this.log.push(m); return; }
    if (m.id === null || m.id === undefined) { this.protocolErrors.push(m.error); return; }
    const p = this.pending.get(Number(m.id));
    if (p) { this.pending.delete(Number(m.id)); p(m); }
  }

  async streamsLoop() {
    const r = this.wt.incomingUnidirectionalStreams.getReader();
    for (;;) {
      const { value, done } = await r.read().catch(() => ({ done: true }));
      if (done) return;
      (async () => {
        const br = new ByteReader(value);
        const hdr = await br.readExact(8);
        if (!hdr) { br.reader.cancel().catch(() => {}); return; } // the FIN within the header
        const h = parseStreamHeader(hdr);
        const key = h.requestId + '/' + h.streamTag;
        const entry = { header: Array.from(hdr), data: br.readAll() };
        this.streams.set(key, entry);
        const w = this.streamWaiters.get(key);
        if (w) w(entry);
      })();
    }
  }

  waitStream(requestId, tag) {
    const key = requestId + '/' + tag;
    if (this.streams.has(key)) return Promise.resolve(this.streams.get(key));
    return new Promise((resolve) => this.streamWaiters.set(key, resolve));
  }

  async datagramLoop() {
    const r = this.wt.datagrams.readable.getReader();
    for (;;) {
      const { value, done } = await r.read().catch(() => ({ done: true }));
      if (done) return;
      let d, payload;
      try {
        d = parseDatagram(value);
        payload = decodeValue(this.encoding, d.payload);
      } catch { continue; } // malformed: dropped (spec §3.3)
      const { channel, flags, requestId } = d;
      if (channel === CHANNEL.PROGRESS) {
        const cb = this.progress.get(requestId);
        if (cb) cb({ via: 'datagram', channel, flags, requestId, ...payload });
      }
    }
  }

  request(method, params, { onProgress } = {}) {
    const id = this.nextId++;
    if (onProgress) {
      params = { ...(params || {}), _meta: { progressToken: id } };
      this.progress.set(id, onProgress);
    }
    const msg = { jsonrpc: '2.0', id, method };
    if (params !== undefined) msg.params = params;
    const done = new Promise((resolve) => this.pending.set(id, resolve));
    const sent = this.writeFrame(this.encode(msg));
    return { id, response: sent.then(() => done) };
  }

  async call(method, params, opts) { return this.request(method, params, opts).response; }

  notify(method, params) {
    const msg = { jsonrpc: '2.0', method };
    if (params !== undefined) msg.params = params;
    return this.writeFrame(this.encode(msg));
  }

  // shutdown sends $/shutdown, finishes the control stream once the server
  // has finished its side, and waits for the session to close.
  async shutdown() {
    const serverDone = new Promise((resolve) => { if (this.controlClosed) resolve(); else this.onControlClosed = resolve; });
    await this.notify('$/shutdown', { reason: 'browser test done' });
    await serverDone;
    await this.writer.close();
    return this.wt.closed.then((info) => ({ closed: true, info }), (err) => ({ closed: true, closeError: String(err) }));
  }
}
