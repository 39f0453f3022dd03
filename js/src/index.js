// @mcp-flow/webtransport: a client Transport for the MCP TypeScript SDK
// (v1 @modelcontextprotocol/sdk, v2 @modelcontextprotocol/client) that
// speaks MCP-Flow (docs/spec.md) over the browser's WebTransport.
//
// The SDK sees ordinary JSON-RPC messages. Underneath: a control stream of
// 4-byte length-prefixed frames (initialize in JSON, then the negotiated
// encoding, CBOR by default: §4), execution streams (8-byte header: §5)
// inlined as text or a base64 blob (or left for transport.stream()),
// progress datagrams (6-byte header: §6) delivered as
// notifications/progress, notifications/cancelled sent as $/cancel (§7.1),
// and $/shutdown on close (§7.2).
import { Encoder, decode as cborDecode } from 'cbor-x';

const cbor = new Encoder({ useRecords: false, mapsAsObjects: true, tagUint8Array: false, largeBigIntToFloat: false });
const utf8 = new TextEncoder();
const fromUTF8 = new TextDecoder('utf-8', { fatal: true });

/** Wire constants (spec §3). */
export const FRAME_HEADER = 4;
export const STREAM_HEADER = 8;
export const DATAGRAM_HEADER = 6;
export const CHANNEL = Object.freeze({ PROGRESS: 1, AUDIO: 2, LOG: 3 });
/** The largest execution stream inlined into a result by default (as the stdio front's -inline-limit). */
export const DEFAULT_INLINE_LIMIT = 8 << 20;
/** How long close() waits for the server to finish its side after $/shutdown. */
export const SHUTDOWN_WAIT_MS = 3000;

/** MCPFlowError is an error of this transport; code is the JSON-RPC code or stream reset code when there is one. */
export class MCPFlowError extends Error {
  constructor(message, { code, cause } = {}) {
    super(message, cause ? { cause } : undefined);
    this.name = 'MCPFlowError';
    if (code !== undefined) this.code = code;
  }
}

function hexToBytes(s) {
  const clean = s.replace(/[^0-9a-fA-F]/g, '');
  if (clean.length !== 64) throw new MCPFlowError(`a certificate hash is 32 bytes (64 hex digits), got ${JSON.stringify(s)}`);
  return Uint8Array.from(clean.match(/../g), (h) => parseInt(h, 16));
}

function base64ToBytes(s) {
  const bin = atob(s);
  const b = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) b[i] = bin.charCodeAt(i);
  return b;
}

/** bytesToBase64 is standard base64 of b. */
export function bytesToBase64(b) {
  let s = '';
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode.apply(null, b.subarray(i, i + 0x8000));
  return btoa(s);
}

// certHashes normalizes the serverCertificateHashes option: a hex or base64
// string, bytes, or WebTransport's own {algorithm, value} objects.
function certHashes(list) {
  if (list === undefined || list === null) return undefined;
  if (!Array.isArray(list)) list = [list];
  return list.map((h) => {
    if (h && typeof h === 'object' && 'algorithm' in h) return h;
    let value = h;
    if (typeof h === 'string') value = /^[0-9a-fA-F:]{64,95}$/.test(h) ? hexToBytes(h) : base64ToBytes(h);
    if (!(value instanceof Uint8Array) || value.length !== 32) throw new MCPFlowError('serverCertificateHashes: each hash is a SHA-256 (32 bytes; hex, base64 or bytes)');
    return { algorithm: 'sha-256', value };
  });
}

function concat(chunks, total) {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) { out.set(c, off); off += c.length; }
  return out;
}

// ByteReader reads exact byte counts from a ReadableStream of Uint8Array.
class ByteReader {
  constructor(readable) { this.reader = readable.getReader(); this.chunks = []; this.size = 0; }
  // readExact returns n bytes, or null at a clean end before them.
  async readExact(n) {
    while (this.size < n) {
      const { value, done } = await this.reader.read();
      if (done) return null;
      this.chunks.push(value); this.size += value.length;
    }
    const all = concat(this.chunks, this.size);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : []; this.size = rest.length;
    return out;
  }
  // rest returns a ReadableStream of what is left: buffered bytes first.
  rest() {
    const buffered = this.chunks; const reader = this.reader;
    this.chunks = []; this.size = 0;
    return new ReadableStream({
      pull: async (ctl) => {
        if (buffered.length) { ctl.enqueue(buffered.shift()); return; }
        try {
          const { value, done } = await reader.read();
          if (done) ctl.close(); else ctl.enqueue(value);
        } catch (e) { ctl.error(e); }
      },
      cancel: (reason) => reader.cancel(reason),
    }, { highWaterMark: 0 });
  }
}

// binaryToBase64 turns CBOR byte strings (spec §4.4: data and blob travel
// raw) back into the base64 strings that MCP's JSON has.
function binaryToBase64(v) {
  if (v instanceof Uint8Array) return bytesToBase64(v);
  if (Array.isArray(v)) { for (let i = 0; i < v.length; i++) v[i] = binaryToBase64(v[i]); return v; }
  if (v && typeof v === 'object') { for (const k of Object.keys(v)) v[k] = binaryToBase64(v[k]); return v; }
  return v;
}

// jsonShape gives v the shape JSON.stringify would: members that are
// undefined (the v1 SDK sends `params: undefined`) are left out, and
// undefined array elements become null, so CBOR never carries undefined
// (spec §4.4 refuses it).
function jsonShape(v) {
  if (Array.isArray(v)) return v.map((x) => (x === undefined ? null : jsonShape(x)));
  if (v && typeof v === 'object' && !(v instanceof Uint8Array)) {
    if (typeof v.toJSON === 'function') return jsonShape(v.toJSON());
    const o = {};
    for (const k of Object.keys(v)) if (v[k] !== undefined && typeof v[k] !== 'function') o[k] = jsonShape(v[k]);
    return o;
  }
  return v;
}

function isText(mime) { return !!mime && (mime.startsWith('text/') || mime.startsWith('application/json')); }

function streamKey(requestId, tag) { return `${requestId}/${tag}`; }

/** streamURI names an execution stream in a resource_link: mcp-flow://stream/REQUEST/TAG. */
export function streamURI(requestId, tag) { return `mcp-flow://stream/${requestId}/${tag}`; }

/**
 * WebTransportClientTransport implements the SDK's Transport interface over
 * MCP-Flow. One instance is one session; the SDK's Client calls start(),
 * send() and close(), and sets onmessage, onerror and onclose.
 */
export class WebTransportClientTransport {
  constructor(url, options = {}) {
    this.url = String(url);
    this.options = options;
    this._hashes = certHashes(options.serverCertificateHashes);
    this.encodings = options.encodings || ['cbor', 'json'];
    this.inlineLimit = options.inlineLimit ?? DEFAULT_INLINE_LIMIT;
    this._WebTransport = options.WebTransport || globalThis.WebTransport;
    this.encoding = 'json';
    this.serverTransport = undefined;
    this.stats = { framesSent: 0, framesReceived: 0, bytesSent: 0, bytesReceived: 0, datagramsReceived: 0, progressDelivered: 0, progressStale: 0, streamsReceived: 0, streamBytes: 0 };
    this.onframe = undefined; // (direction, message, bytes) => void: a frame log for tools such as the inspector
    this._initId = undefined;
    this._requests = new Map(); // our calls in flight: id -> {progressToken}
    this._cancelled = new Set();
    this._lastProgress = new Map();
    this._streams = new Map(); // key -> {header, readable, error}
    this._streamWaiters = new Map();
    this._streamErrors = new Map();
    this._taken = new Set();
    this._closed = false;
  }

  /** start opens the WebTransport session and the control stream (called by the SDK's connect). */
  async start() {
    if (this._wt) throw new MCPFlowError('WebTransportClientTransport already started');
    if (!this._WebTransport) throw new MCPFlowError('this environment has no WebTransport');
    const opts = {};
    if (this._hashes) opts.serverCertificateHashes = this._hashes;
    this._wt = new this._WebTransport(this.url, opts);
    try {
      await this._wt.ready;
    } catch (e) {
      const why = this._hashes
        ? 'is the server up, and does its certificate match serverCertificateHashes (ECDSA P-256, valid under 14 days)?'
        : 'is the server up, and is its certificate trusted (or pass serverCertificateHashes)?';
      throw new MCPFlowError(`MCP-Flow: cannot open a WebTransport session to ${this.url}: ${e && e.message || e}; ${why}`, { cause: e });
    }
    const ctrl = await this._wt.createBidirectionalStream();
    this._writer = ctrl.writable.getWriter();
    this._reader = new ByteReader(ctrl.readable);
    this._controlDone = this._readLoop();
    this._acceptStreams();
    this._readDatagrams();
    this._wt.closed.then(() => this._finish(), (e) => this._finish(e));
  }

  _encode(msg) {
    return this.encoding === 'cbor' ? cbor.encode(jsonShape(msg)) : utf8.encode(JSON.stringify(msg));
  }

  _decode(bytes) {
    if (this.encoding === 'cbor') return binaryToBase64(cborDecode(bytes));
    return JSON.parse(fromUTF8.decode(bytes));
  }

  async _writeFrame(msg) {
    const body = this._encode(msg);
    const frame = new Uint8Array(FRAME_HEADER + body.length);
    new DataView(frame.buffer).setUint32(0, body.length, false);
    frame.set(body, FRAME_HEADER);
    this.stats.framesSent++; this.stats.bytesSent += frame.length;
    if (this.onframe) this.onframe('out', msg, frame.length, this.encoding);
    await this._writer.write(frame);
  }

  /**
   * send passes one JSON-RPC message of the SDK's to the server. initialize
   * gains the transport object (§4.1); notifications/cancelled becomes
   * $/cancel (§7.1).
   */
  async send(message) {
    if (this._closed) throw new MCPFlowError('MCP-Flow session closed');
    let msg = message;
    if (msg.method === 'initialize' && msg.id !== undefined) {
      this._initId = msg.id;
      msg = { ...msg, params: { ...(msg.params || {}), transport: { type: 'mcp-flow', version: '0.1', encodings: this.encodings } } };
    } else if (msg.method === 'notifications/cancelled') {
      const p = msg.params || {};
      this._cancelled.add(String(p.requestId));
      msg = { jsonrpc: '2.0', method: '$/cancel', params: { requestId: p.requestId, reason: p.reason || 'cancelled by the client' } };
    }
    if (msg.method !== undefined && msg.id !== undefined && msg.method !== '$/cancel') {
      const id = msg.id;
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffffffff) {
        throw new MCPFlowError(`MCP-Flow request ids are integers in [0, 2^32-1] (spec §3.2); the SDK sent ${JSON.stringify(id)}`);
      }
      this._requests.set(String(id), { progressToken: msg.params && msg.params._meta && msg.params._meta.progressToken });
    }
    await this._writeFrame(msg);
  }

  async _readFrame() {
    const hdr = await this._reader.readExact(FRAME_HEADER);
    if (!hdr) return null;
    const n = new DataView(hdr.buffer, hdr.byteOffset).getUint32(0, false);
    const max = (this.serverTransport && this.serverTransport.maxFrameSize) || (16 << 20);
    if (n === 0 || n > max) throw new MCPFlowError(`control frame of ${n} bytes (limit ${max}; spec §3.1)`, { code: -32600 });
    const body = await this._reader.readExact(n);
    if (!body) throw new MCPFlowError('control stream ended inside a frame');
    this.stats.framesReceived++; this.stats.bytesReceived += FRAME_HEADER + n;
    return body;
  }

  async _readLoop() {
    try {
      for (;;) {
        const frame = await this._readFrame();
        if (!frame) break;
        const msg = this._decode(frame);
        if (this.onframe) this.onframe('in', msg, FRAME_HEADER + frame.length, this.encoding);
        for (const m of Array.isArray(msg) ? msg : [msg]) this._dispatch(m);
      }
    } catch (e) {
      if (!this._closed) this._error(e instanceof MCPFlowError ? e : new MCPFlowError('control stream: ' + (e && e.message || e), { cause: e }));
    }
    // The server finished its side: after $/shutdown, the session is over.
    if (!this._closed && this._shutdownReceived) this.close();
  }

  _dispatch(m) {
    if (m.method === '$/shutdown') { this._shutdownReceived = true; return; }
    if (m.method === '$/streamError') {
      const p = m.params || {};
      const key = streamKey(p.requestId, p.streamTag);
      this._streamErrors.set(key, p.error || p);
      return;
    }
    if (m.method === 'notifications/progress') { this._progress(m.params); return; }
    if (m.method !== undefined) { this._deliver(m); return; }
    // A response.
    const key = String(m.id);
    if (m.id !== undefined && m.id !== null && this._initId !== undefined && key === String(this._initId) && m.result) {
      // §4.2: initialize's result is JSON; every later frame is in the negotiated encoding.
      this.serverTransport = m.result.transport;
      if (this.serverTransport && this.serverTransport.encoding) this.encoding = this.serverTransport.encoding;
      this._initId = undefined;
    }
    const req = this._requests.get(key);
    this._requests.delete(key);
    if (req && req.progressToken !== undefined) this._lastProgress.delete(String(req.progressToken));
    if (this._cancelled.delete(key)) return; // the SDK has given up on it: our $/cancel's -32800
    const refs = m.result && Array.isArray(m.result.content) ? m.result.content.filter((c) => c && c.type === 'ref/stream') : [];
    if (refs.length === 0) { this._deliver(m); return; }
    this._resolveStreams(m, refs).then((r) => this._deliver(r));
  }

  // _resolveStreams replaces each ref/stream block: streams of at most
  // inlineLimit bytes become text (text/* or JSON that is UTF-8) or a
  // resource with a base64 blob, as the stdio front does (spec §10); larger
  // ones a resource_link to streamURI(id, tag), read with stream().
  async _resolveStreams(m, refs) {
    const content = [];
    try {
      for (const c of m.result.content) {
        if (!c || c.type !== 'ref/stream') { content.push(c); continue; }
        const uri = streamURI(m.id, c.streamTag);
        if (this.options.inlineStreams === false) {
          content.push({ type: 'resource_link', uri, name: `stream ${c.streamTag}`, mimeType: c.mimeType });
          continue;
        }
        const readable = await this.stream(m.id, c.streamTag);
        const reader = readable.getReader();
        const chunks = []; let total = 0; let over = false;
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          chunks.push(value); total += value.length;
          if (total > this.inlineLimit) { over = true; break; }
        }
        if (over) {
          // Too large to inline: hand it over, head first, through stream().
          const head = concat(chunks, total);
          this._streams.set(streamKey(m.id, c.streamTag), { readable: prepend(head, reader), taken: false });
          this._taken.delete(streamKey(m.id, c.streamTag));
          content.push({ type: 'resource_link', uri, name: `stream ${c.streamTag}`, mimeType: c.mimeType });
          continue;
        }
        const bytes = concat(chunks, total);
        let text;
        if (isText(c.mimeType)) { try { text = fromUTF8.decode(bytes); } catch { text = undefined; } }
        content.push(text !== undefined ? { type: 'text', text } : { type: 'resource', resource: { uri, mimeType: c.mimeType, blob: bytesToBase64(bytes) } });
      }
    } catch (e) {
      return { jsonrpc: '2.0', id: m.id, error: { code: e.code || -32603, message: e.message } };
    }
    return { ...m, result: { ...m.result, content } };
  }

  /**
   * stream returns the raw bytes of execution stream `tag` of request
   * `requestId` (or of a resource_link's streamURI) as a ReadableStream,
   * once. It errors with an MCPFlowError carrying the $/streamError text if
   * the server fails the stream: a truncated payload never ends cleanly.
   */
  stream(requestId, tag) {
    if (typeof requestId === 'string' && requestId.startsWith('mcp-flow://stream/')) {
      const [, id, t] = requestId.slice('mcp-flow://stream/'.length).match(/^([^/]+)\/(\d+)$/) || [];
      requestId = Number(id); tag = Number(t);
    }
    const key = streamKey(requestId, tag);
    if (this._taken.has(key)) return Promise.reject(new MCPFlowError(`execution stream ${tag} of request ${requestId} was already taken`));
    this._taken.add(key);
    const got = this._streams.get(key);
    if (got) { this._streams.delete(key); return Promise.resolve(this._guard(key, got.readable)); }
    return new Promise((resolve) => this._streamWaiters.set(key, (e) => resolve(this._guard(key, e.readable))));
  }

  // _guard turns a reset into an error that says why ($/streamError, §5.4).
  _guard(key, readable) {
    const reader = readable.getReader();
    const self = this;
    return new ReadableStream({
      async pull(ctl) {
        try {
          const { value, done } = await reader.read();
          if (done) ctl.close(); else { self.stats.streamBytes += value.length; ctl.enqueue(value); }
        } catch (e) {
          // A reset may come before its $/streamError: wait for the control stream a moment.
          await new Promise((r) => setTimeout(r, 50));
          const se = self._streamErrors.get(key);
          ctl.error(new MCPFlowError(`execution stream ${key} failed: ${se ? (se.message || JSON.stringify(se)) : (e && e.message || e)}`, { code: se && se.code, cause: e }));
        }
      },
      cancel(reason) { return reader.cancel(reason); },
    }, { highWaterMark: 0 });
  }

  async _acceptStreams() {
    const r = this._wt.incomingUnidirectionalStreams.getReader();
    for (;;) {
      const { value, done } = await r.read().catch(() => ({ done: true }));
      if (done) return;
      (async () => {
        const br = new ByteReader(value);
        const hdr = await br.readExact(STREAM_HEADER).catch(() => null);
        if (!hdr) return;
        const dv = new DataView(hdr.buffer, hdr.byteOffset);
        const key = streamKey(dv.getUint32(0, false), dv.getUint32(4, false));
        this.stats.streamsReceived++;
        const entry = { header: hdr, readable: br.rest() };
        const w = this._streamWaiters.get(key);
        if (w) { this._streamWaiters.delete(key); w(entry); } else this._streams.set(key, entry);
      })();
    }
  }

  async _readDatagrams() {
    const r = this._wt.datagrams.readable.getReader();
    for (;;) {
      const { value, done } = await r.read().catch(() => ({ done: true }));
      if (done) return;
      this.stats.datagramsReceived++;
      if (value.length < DATAGRAM_HEADER || value[0] !== CHANNEL.PROGRESS) continue;
      let payload;
      try { payload = this._decode(value.subarray(DATAGRAM_HEADER)); } catch { continue; }
      if (this.ondatagram) this.ondatagram(value[0], new DataView(value.buffer, value.byteOffset).getUint32(2, false), payload);
      this._progress(payload);
    }
  }

  // _progress delivers a progress update as notifications/progress, never
  // backwards (spec §6.2: a datagram overtaken, or the control-stream twin).
  _progress(p) {
    if (!p || p.progressToken === undefined) return;
    const key = String(p.progressToken);
    const last = this._lastProgress.get(key);
    if (last !== undefined && !(p.progress > last)) { this.stats.progressStale++; return; }
    this._lastProgress.set(key, p.progress);
    this.stats.progressDelivered++;
    this._deliver({ jsonrpc: '2.0', method: 'notifications/progress', params: p });
  }

  _deliver(m) {
    if (this.onmessage) {
      try { this.onmessage(m); } catch (e) { this._error(e); }
    }
  }

  _error(e) { if (this.onerror) this.onerror(e); }

  /**
   * close ends the session gracefully (spec §7.2): $/shutdown, then the
   * server's FIN on the control stream (at most SHUTDOWN_WAIT_MS), our FIN,
   * and the WebTransport close. onclose follows.
   */
  async close() {
    if (this._closed) return;
    this._closed = true;
    if (this._writer) {
      try {
        if (!this._shutdownReceived) await this._writeFrame({ jsonrpc: '2.0', method: '$/shutdown', params: { reason: 'client closed' } });
        let timer;
        await Promise.race([this._controlDone, new Promise((r) => { timer = setTimeout(r, SHUTDOWN_WAIT_MS); })]);
        clearTimeout(timer);
        await this._writer.close().catch(() => {});
      } catch { /* the session is gone already */ }
    }
    try { this._wt && this._wt.close({ closeCode: 0, reason: 'done' }); } catch { /* closed */ }
    this._finish();
  }

  _finish(err) {
    if (this._ended) return;
    this._ended = true;
    this._closed = true;
    if (err && this.onerror && !this._shutdownReceived) this._error(new MCPFlowError('MCP-Flow session lost: ' + (err.message || err), { cause: err }));
    if (this.onclose) this.onclose();
  }
}

// prepend returns a ReadableStream of head, then the rest of reader.
function prepend(head, reader) {
  let first = head;
  return new ReadableStream({
    async pull(ctl) {
      if (first) { ctl.enqueue(first); first = undefined; return; }
      try {
        const { value, done } = await reader.read();
        if (done) ctl.close(); else ctl.enqueue(value);
      } catch (e) { ctl.error(e); }
    },
    cancel(reason) { return reader.cancel(reason); },
  }, { highWaterMark: 0 });
}
