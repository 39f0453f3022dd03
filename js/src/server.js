// server.js: MCP-Flow (docs/spec.md) for MCP servers written with the
// official TypeScript SDK (v2, @modelcontextprotocol/server: McpServer or
// Server .connect(transport)), served by Deno's WebTransport server
// (Deno.QuicEndpoint and Deno.upgradeWebTransport, --unstable-net; Deno 2.9).
//
//   import { serveMcpFlow } from '@mcp-flow/webtransport/server'; // js/src/server.js
//   const srv = await serveMcpFlow({ cert, key, port: 4433, factory: (session) => myMcpServer(session) });
//
// It lives beside the client transport (index.js) and shares its wire code
// (wire.js: frames, headers, JSON and CBOR), so that both sides of this
// package read and write the same bytes; it is not in the browser bundle
// (build.mjs bundles index.js), since it needs Deno's server API.
//
// Deno 2.9.6's WebTransport streams never send a FIN and cannot be reset
// (docs/INTEROP.md, "Deno as a server"), so a session is served on the QUIC
// connection's own streams, with the WebTransport prefixes written and read
// here (draft-ietf-webtrans-http3 §4.2-4.3: 0x41 or 0x54, then the session
// id): their close() sends the FIN. Three deviations remain, each Deno's:
//   - no stream reset: a failed execution stream gets $/streamError and is
//     left unfinished (never abort(), which would FIN it and make a
//     truncated payload look complete; spec §5.4), as is a cancelled one;
//   - no clean close: Deno's wt.close() sends no CLOSE_WEBTRANSPORT_SESSION
//     capsule (browsers read "Connection lost"), so after $/shutdown the
//     server finishes the control stream and leaves the close to the
//     client (spec §7.2 rule 4 has the sender close after PeerFINWait),
//     closing itself only after the drain deadline;
//   - no Origin check and no Authorization header: Deno accepts every
//     CONNECT before the script sees it (wt.url alone).
//
// This file is long because it is one session's state machine (spec §2):
// the control stream, execution streams, datagrams, cancel and shutdown
// share the request table and cannot be split without passing it around.
import {
  CHANNEL, CODE, DATAGRAM_HEADER, FRAME_HEADER, MCPFlowError, ByteReader, base64ToBytes, datagramOf, decodePayload,
  deferred, encodePayload, frameOf, streamHeader, utf8,
} from './wire.js';

/** The limits a session announces and keeps (spec §8), unless options say otherwise. */
export const SERVER_DEFAULTS = Object.freeze({
  maxFrameSize: 16 << 20,
  maxConcurrentStreams: 64,
  maxRequestsInFlight: 256,
  // Content over this many bytes leaves the result for an execution stream
  // (spec §10, Upstreams: 256 KiB).
  streamThreshold: 256 << 10,
  // The largest datagram payload tried; a larger progress update goes on
  // the control stream (spec §6).
  maxDatagram: 1000,
  drainTimeoutMs: 30000,
  handshakeTimeoutMs: 10000,
  // QUIC's idle timeout and keep-alive (spec §8: 8 s, 2 s). Without the
  // keep-alive, a session idle for 30 s died (quinn's default idle timeout,
  // a draft-02 Go client sending no keep-alive): "peer gone" at 30.26 s.
  idleTimeoutMs: 8000,
  keepAliveMs: 2000,
});
/** The prefix of the resource_link URI openStream gives a tool (as the client transport names streams). */
export const STREAM_URI_PREFIX = 'mcp-flow://stream/';
/** The _meta key of a ref/stream block that carries the block it replaced (spec §10; mcpjson.OriginalKey). */
export const ORIGINAL_KEY = 'io.mcp-flow/original';

const WT_BIDI = 0x41;
const WT_UNI = 0x54;
const REPORT_EVERY_MS = 1000; // -32002 and -32004 reports: one a second per session (spec §5.3, §6)

// varint encodes a QUIC variable-length integer (RFC 9000 §16) below 2^30.
function varint(n) {
  if (n < 64) return [n];
  if (n < 16384) return [0x40 | (n >> 8), n & 0xff];
  return [0x80 | (n >>> 24), (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
}

// readVarint reads one QUIC varint from a ByteReader, or null at its end.
async function readVarint(br) {
  const first = await br.readExact(1);
  if (!first) return null;
  const len = 1 << (first[0] >> 6);
  const rest = len > 1 ? await br.readExact(len - 1) : new Uint8Array(0);
  if (!rest) return null;
  let n = first[0] & 0x3f;
  for (const b of rest) n = n * 256 + b;
  return n;
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isU32 = (id) => Number.isInteger(id) && id >= 0 && id <= 0xffffffff;

/**
 * serveMcpFlow listens on hostname:port (QUIC, ALPN h3) and serves each
 * WebTransport session whose URL path is options.path (any path when
 * unset): factory(session) returns a fresh McpServer (or Server) for it,
 * which is connected to the session's McpFlowServerTransport. cert and key
 * are PEM. It returns {port, close()}; close() stops taking sessions.
 */
export async function serveMcpFlow({ cert, key, hostname = '127.0.0.1', port = 0, path, factory, log = () => {}, ...limits }) {
  const lim = { ...SERVER_DEFAULTS, ...limits };
  const endpoint = new Deno.QuicEndpoint({ hostname, port });
  const listener = endpoint.listen({ cert, key, alpnProtocols: ['h3'], keepAliveInterval: lim.keepAliveMs, maxIdleTimeout: lim.idleTimeoutMs });
  const sessions = new Set();
  let closed = false;
  (async () => {
    for (;;) {
      let conn;
      try {
        conn = await listener.accept();
      } catch (e) {
        // One connection's failed handshake rejects accept() (Deno 2.9.6:
        // "aborted by peer … during the handshake"); the listener goes on.
        if (closed) return;
        log(`accept: ${e && e.message || e}`);
        continue;
      }
      (async () => {
        const wt = await Deno.upgradeWebTransport(conn);
        await wt.ready;
        wt.closed.catch(() => {});
        if (path !== undefined && new URL(wt.url).pathname !== path) {
          // Deno has answered the CONNECT with 200 already: a wrong path can
          // only be closed.
          log(`session for ${wt.url}: not ${path}, closed`);
          wt.close({ closeCode: 404, reason: 'no MCP-Flow endpoint here' });
          return;
        }
        const t = new McpFlowServerTransport(conn, wt, { ...limits, log });
        sessions.add(t);
        t.ended.then(() => sessions.delete(t));
        await factory(t).connect(t);
      })().catch((e) => log(`session: ${e && e.message || e}`));
    }
  })();
  return {
    port: endpoint.addr.port,
    sessions,
    close() { closed = true; try { endpoint.close(); } catch { /* closed */ } },
  };
}

/**
 * McpFlowServerTransport is the SDK's Transport for one MCP-Flow session on
 * a Deno QUIC connection (conn) and its WebTransport session (wt). The SDK
 * calls start(), send() and close(), and sets onmessage, onerror and
 * onclose; a tool that wants to stream its output itself calls
 * openStream(ctx.mcpReq.id, {mimeType}).
 */
export class McpFlowServerTransport {
  constructor(conn, wt, options = {}) {
    this.conn = conn;
    this.wt = wt;
    this.limits = { ...SERVER_DEFAULTS, ...options };
    this.log = options.log || (() => {});
    this.encoding = 'json'; // until initialize's result has gone (spec §4.2)
    this.ready = false;
    this.datagrams = true; // the client's datagrams: false turns them off (spec §4.1)
    this.sessionId = undefined; // MCP-Flow has none (the SDK reads it)
    this.onmessage = undefined;
    this.onerror = undefined;
    this.onclose = undefined;
    this._requests = new Map(); // String(id) -> request state, from its arrival until answered and its streams ended
    this._openStreams = 0;
    this._initId = undefined;
    this._initDone = undefined; // resolves when initialize's answer has gone out
    this._shutdown = undefined; // 'received' or 'sent' once a $/shutdown went either way
    this._finished = false; // our FIN on the control stream
    this._lastReport = -Infinity;
    this._held = 0; // reports held back since the last one
    this._ended = deferred();
    this.ended = this._ended.promise;
    this._closing = false;
    this._writeChain = Promise.resolve();
    this._leftOpen = new Set(); // writers of failed execution streams, left unfinished (ExecStream.fail)
  }

  /** start serves the session: the control stream, client streams and datagrams. */
  async start() {
    this._handshake = setTimeout(() => {
      if (!this.ready) this._abort(2, 'handshake timeout');
    }, this.limits.handshakeTimeoutMs);
    this.wt.closed.then(() => this._end(), () => this._end());
    this._acceptBidi();
    this._acceptUni();
    this._readDatagrams();
  }

  // _acceptBidi takes the client's bidirectional streams from the QUIC
  // connection: the first of the session is the control stream (spec §2);
  // MCP-Flow 0.1 has no other, and Deno cannot reset one with 32600, so a
  // later one is cancelled.
  async _acceptBidi() {
    try {
      for await (const s of this.conn.incomingBidirectionalStreams) {
        const br = new ByteReader(s.readable);
        const type = await readVarint(br);
        const sid = await readVarint(br);
        if (type !== WT_BIDI || sid === null || this._control) { br.cancel(); continue; }
        this.sid = sid;
        this._control = { br, writer: s.writable.getWriter() };
        clearTimeout(this._handshake);
        this._handshake = setTimeout(() => { if (!this.ready) this._abort(2, 'handshake timeout'); }, this.limits.handshakeTimeoutMs);
        this._readControl().catch((e) => this._error(e));
      }
    } catch { /* the connection ended */ }
  }

  // _acceptUni refuses every unidirectional stream the client opens: in 0.1
  // only servers open execution streams, so each names no request of ours
  // (an injection, spec §5.3): -32002 with id null, at most once a second.
  async _acceptUni() {
    try {
      for await (const s of this.wt.incomingUnidirectionalStreams) {
        s.cancel().catch(() => {});
        this._report(CODE.RESOURCE_NOT_FOUND, 'stream injection: a client-opened stream names no request in flight (spec §5.3)');
      }
    } catch { /* the session ended */ }
  }

  // _readDatagrams reads the client's datagrams: none is expected; before
  // initialize's end or on a session without datagrams each is -32004
  // (spec §6), at most once a second.
  async _readDatagrams() {
    const r = this.wt.datagrams.readable.getReader();
    for (;;) {
      const { done } = await r.read().catch(() => ({ done: true }));
      if (done) return;
      if (!this.ready || !this.datagrams) this._report(CODE.DATAGRAMS_UNSUPPORTED, 'datagrams not supported on this session');
    }
  }

  // _report sends a protocol error with id null, rate-limited (spec §5.3).
  _report(code, message) {
    const now = Date.now();
    if (now - this._lastReport < REPORT_EVERY_MS) { this._held++; return; }
    this._lastReport = now;
    const held = this._held;
    this._held = 0;
    this._frame({ jsonrpc: '2.0', id: null, error: { code, message: held ? `${message} (${held} more held back)` : message } }).catch(() => {});
  }

  async _readControl() {
    const { br } = this._control;
    for (;;) {
      const hdr = await br.readExact(FRAME_HEADER);
      if (!hdr) break; // the client's FIN
      const n = new DataView(hdr.buffer, hdr.byteOffset).getUint32(0, false);
      if (n === 0) { await this._frame(errorOf(null, CODE.INVALID_REQUEST, 'zero-length frame (spec §3.1)')); continue; }
      if (n > this.limits.maxFrameSize) {
        // The stream cannot be resynchronised: -32600, our FIN, the end (code 1).
        await this._frame(errorOf(null, CODE.INVALID_REQUEST, `frame of ${n} bytes is over maxFrameSize ${this.limits.maxFrameSize} (spec §3.1)`)).catch(() => {});
        await this._fin();
        this._abort(1, 'protocol error');
        return;
      }
      const body = await br.readExact(n);
      if (!body) break;
      let msg;
      try {
        msg = decodePayload(body, this.encoding);
      } catch {
        await this._mismatch(body);
        continue;
      }
      await this._receive(msg);
    }
    // The client finished its side: as good as $/shutdown (spec §7.2).
    this._peerFIN = true;
    if (this.ready) this._startShutdown('received');
    else this._abort(5, 'the client finished the control stream before initialize');
    this._maybeFinish();
  }

  // _mismatch answers a frame that is not in the session's encoding: -32003
  // (with its id) when it is a message in the other encoding, else -32700
  // with id null (spec §4.3).
  async _mismatch(body) {
    const other = this.encoding === 'cbor' ? 'json' : 'cbor';
    let m;
    try { m = decodePayload(body, other); } catch { m = undefined; }
    if (isObject(m) || Array.isArray(m)) {
      const id = isObject(m) && m.id !== undefined ? m.id : null;
      await this._frame(errorOf(id, CODE.ENCODING_MISMATCH, `frame in ${other}, the session speaks ${this.encoding} (spec §4.3)`));
      return;
    }
    await this._frame(errorOf(null, CODE.PARSE, `parse error: the frame is not ${this.encoding} (spec §4.3)`));
  }

  async _receive(msg) {
    if (Array.isArray(msg)) {
      if (msg.length === 0) { await this._frame(errorOf(null, CODE.INVALID_REQUEST, 'empty batch')); return; }
      for (const m of msg) await this._receive(m);
      return;
    }
    if (!isObject(msg) || msg.jsonrpc !== '2.0') {
      await this._frame(errorOf(isObject(msg) && msg.id !== undefined ? msg.id : null, CODE.INVALID_REQUEST, 'not a JSON-RPC 2.0 message'));
      return;
    }
    const { method, id } = msg;
    if (method === undefined) { this._deliver(msg); return; } // a response to one of the SDK's requests
    if (typeof method !== 'string') { await this._frame(errorOf(id ?? null, CODE.INVALID_REQUEST, 'method is not a string')); return; }
    const isRequest = id !== undefined && id !== null && !method.startsWith('notifications/');
    if (method === '$/cancel' || method === 'notifications/cancelled') { this._cancel(msg.params, method === '$/cancel'); return; }
    if (method === '$/shutdown') {
      if (!this.ready) { await this._frame(errorOf(null, CODE.INVALID_REQUEST, '$/shutdown before initialize: nothing to drain (spec §2)')); return; }
      this._startShutdown('received');
      this._maybeFinish();
      return;
    }
    if (method.startsWith('$/')) {
      if (isRequest) await this._frame(errorOf(id, CODE.METHOD_NOT_FOUND, `unknown transport method ${method}`));
      return; // an unknown $/ notification is ignored (spec §1)
    }
    if (!isRequest) {
      if (this.ready) this._deliver(id === undefined ? msg : { jsonrpc: '2.0', method, params: msg.params });
      return;
    }
    if (method === 'initialize') { await this._initialize(msg); return; }
    if (!this.ready && method !== 'ping') { await this._frame(errorOf(id, CODE.INVALID_REQUEST, 'session is not initialized (spec §2)')); return; }
    if (this._shutdown) { await this._frame(errorOf(id, CODE.SHUTTING_DOWN, 'session shutting down (spec §7.2): retry on a new session')); return; }
    const key = String(id);
    if (this._requests.has(key)) { await this._frame(errorOf(id, CODE.INVALID_REQUEST, `request id ${id} is in flight already`)); return; }
    if (this._unanswered() >= this.limits.maxRequestsInFlight) {
      await this._frame(errorOf(id, CODE.TOO_MANY_REQUESTS, `too many requests in flight (${this.limits.maxRequestsInFlight}; spec §8)`));
      return;
    }
    const meta = isObject(msg.params) && isObject(msg.params._meta) ? msg.params._meta : {};
    this._requests.set(key, {
      id, progressToken: meta.progressToken, answered: false, cancelled: false, streams: [], nextTag: 1,
      refusal: undefined, progress: undefined, progressOnControl: true,
    });
    this._deliver(msg);
  }

  _unanswered() { let n = 0; for (const r of this._requests.values()) if (!r.answered) n++; return n; }

  // _initialize negotiates the transport (spec §4.1): the client's transport
  // object is checked and taken out, the SDK answers the rest, and send()
  // adds ours to the result. No frame is read until that answer has gone
  // (§4.2: the switch comes before the next frame).
  async _initialize(msg) {
    if (this.ready || this._initId !== undefined) { await this._frame(errorOf(msg.id, CODE.INVALID_REQUEST, 'initialize again')); return; }
    const params = isObject(msg.params) ? { ...msg.params } : {};
    const tr = params.transport;
    delete params.transport;
    let encoding = 'json';
    if (tr !== undefined) {
      if (!isObject(tr) || tr.type !== 'mcp-flow') {
        await this._frame(errorOf(msg.id, CODE.INVALID_REQUEST, `unknown transport type ${JSON.stringify(isObject(tr) ? tr.type : tr)}: this server speaks mcp-flow (spec §4.1)`));
        return;
      }
      if (Array.isArray(tr.encodings)) encoding = tr.encodings.find((e) => e === 'json' || e === 'cbor') || 'json';
      if (tr.datagrams === false) this.datagrams = false;
    }
    this._chosen = encoding;
    this._initId = msg.id;
    this._initDone = deferred();
    this._deliver({ ...msg, params });
    await this._initDone.promise;
  }

  // _cancel handles $/cancel and MCP's notifications/cancelled (spec §7.1):
  // the SDK aborts the handler (its signal) and sends nothing more for it;
  // $/cancel is answered -32800 here. The request's execution streams stop
  // where they are, with $/streamError: Deno cannot reset them with 32800.
  _cancel(params, answer) {
    const id = isObject(params) ? params.requestId : undefined;
    const r = id === undefined ? undefined : this._requests.get(String(id));
    if (!r || r.cancelled) return; // finished, or unknown: ignored
    const reason = isObject(params) && typeof params.reason === 'string' ? params.reason : 'cancelled by the client';
    r.cancelled = true;
    for (const s of r.streams) s.fail(`cancelled: ${reason}`, false);
    if (r.answered) { this._settle(r); return; }
    this._deliver({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: r.id, reason } });
    r.answered = true;
    if (answer) this._frame(errorOf(r.id, CODE.CANCELLED, `request cancelled: ${reason}`)).catch(() => {});
    this._settle(r);
  }

  /**
   * openStream opens an execution stream for request requestId (a tool's
   * ctx.mcpReq.id; spec §5.1) and writes its header. It returns {tag, uri,
   * link, writable}: put link (a resource_link to uri) in the result, which
   * sends it as {type: "ref/stream", streamTag, mimeType}; write the bytes
   * to writable and close() it (the FIN); abort(reason) it on failure
   * ($/streamError; the stream is left unfinished, spec §5.4). Past
   * maxConcurrentStreams it throws an MCPFlowError with code -32000, and the
   * request is answered with that error whatever its handler returns.
   */
  async openStream(requestId, { mimeType = 'application/octet-stream' } = {}) {
    const r = this._requests.get(String(requestId));
    if (!r || r.cancelled) throw new MCPFlowError(`no request ${requestId} in flight`, { code: CODE.INVALID_REQUEST });
    if (!isU32(r.id)) throw new MCPFlowError(`request id ${JSON.stringify(r.id)} cannot name an execution stream (spec §3.2)`, { code: CODE.INVALID_REQUEST });
    const s = await this._open(r, mimeType);
    const self = this;
    const writable = new WritableStream({
      write(chunk) { return s.write(chunk); },
      close() { return s.close(); },
      abort(reason) { s.fail(String(reason && reason.message || reason || 'the writer failed'), true); self._settle(r); },
    }, { highWaterMark: 1 });
    s.done.then(() => this._settle(r), () => this._settle(r));
    return { tag: s.tag, uri: s.uri, writable, link: { type: 'resource_link', uri: s.uri, name: `stream ${s.tag}`, mimeType } };
  }

  // _open opens one execution stream of request r (its header written), or
  // throws -32000 past maxConcurrentStreams (spec §5.3).
  async _open(r, mimeType) {
    if (this._openStreams >= this.limits.maxConcurrentStreams) {
      r.refusal = errorOf(r.id, CODE.STREAM_LIMIT, `stream limit exceeded: maxConcurrentStreams is ${this.limits.maxConcurrentStreams} (spec §5.3)`).error;
      throw new MCPFlowError(r.refusal.message, { code: CODE.STREAM_LIMIT });
    }
    this._openStreams++;
    const tag = r.nextTag++;
    const s = new ExecStream(this, r, tag, mimeType);
    r.streams.push(s);
    try {
      const qs = await this.conn.createUnidirectionalStream();
      s.writer = qs.getWriter();
      await s.writer.write(Uint8Array.from([...varint(WT_UNI), ...varint(this.sid)]));
      await s.writer.write(streamHeader(r.id, tag));
    } catch (e) {
      s.fail(`opening the stream: ${e && e.message || e}`, true);
    }
    return s;
  }

  /** send passes one JSON-RPC message of the SDK's to the client. */
  async send(message, options = {}) {
    if (this._closing && this._ended.settled) return;
    const m = message;
    if (m.method === undefined && m.id !== undefined) { await this._respond(m); return; }
    if (m.method === 'notifications/progress' && options.relatedRequestId !== undefined) { await this._progress(m, options.relatedRequestId); return; }
    await this._frame(m);
  }

  // _respond sends the SDK's answer to a request of the client's.
  async _respond(m) {
    if (this._initId !== undefined && m.id === this._initId) {
      // initialize's answer, in JSON; then the switch (spec §4.2).
      this._initId = undefined;
      if (m.result) {
        m = { ...m, result: { ...m.result, transport: this._transportObject() } };
        await this._frame(m);
        this.encoding = this._chosen;
        this.ready = true;
        clearTimeout(this._handshake);
      } else {
        await this._frame(m);
      }
      this._initDone.resolve();
      return;
    }
    const r = this._requests.get(String(m.id));
    if (!r) { await this._frame(m); return; } // ping before initialize, or an id we do not track
    if (r.answered) return; // cancelled: answered -32800 already
    let out = m;
    if (m.result && Array.isArray(m.result.content) && !r.refusal) {
      try {
        out = { ...m, result: { ...m.result, content: await this._streamContent(r, m.result.content) } };
      } catch (e) {
        if (!r.refusal) out = errorOf(m.id, CODE.INTERNAL, `moving the result to an execution stream: ${e && e.message || e}`);
      }
    }
    if (r.refusal) {
      out = { jsonrpc: '2.0', id: m.id, error: r.refusal };
      for (const s of r.streams) s.fail('the request was refused: stream limit exceeded', false);
    }
    // The newest progress goes on the control stream before the result
    // (spec §6.2), unless it went there already.
    if (r.progress && !r.progressOnControl) await this._frame(r.progress).catch(() => {});
    if (r.answered) return;
    r.answered = true;
    await this._frame(out, true);
    this._settle(r);
  }

  // _streamContent turns the result's content into what goes on the wire:
  // openStream's links become ref/stream blocks, and text, data, resource
  // text or blob over streamThreshold bytes move to an execution stream
  // each, the block replaced by a ref/stream that carries it (its payload
  // null) in _meta[ORIGINAL_KEY] (spec §10, Upstreams).
  async _streamContent(r, content) {
    const out = [];
    const pumps = [];
    for (const c of content) {
      const own = isObject(c) && c.type === 'resource_link' && typeof c.uri === 'string' ? r.streams.find((s) => s.uri === c.uri) : undefined;
      if (own) { out.push({ type: 'ref/stream', streamTag: own.tag, mimeType: own.mimeType }); continue; }
      const big = this._payloadOf(c);
      if (!big) { out.push(c); continue; }
      const s = await this._open(r, big.mimeType);
      const original = structuredClone(c);
      if (big.field.startsWith('resource.')) original.resource[big.field.slice(9)] = null;
      else original[big.field] = null;
      out.push({ type: 'ref/stream', streamTag: s.tag, mimeType: big.mimeType, _meta: { [ORIGINAL_KEY]: { block: original, field: big.field } } });
      pumps.push([s, big.bytes]);
    }
    for (const [s, bytes] of pumps) {
      s.done.then(() => this._settle(r), () => this._settle(r));
      s.write(bytes).then(() => s.close()).catch(() => {});
    }
    return out;
  }

  // _payloadOf returns {field, bytes, mimeType} of a content block whose
  // payload is over streamThreshold bytes, else undefined.
  _payloadOf(c) {
    if (!isObject(c)) return undefined;
    const limit = this.limits.streamThreshold;
    const text = (s) => (typeof s === 'string' && s.length > limit / 3 ? utf8.encode(s) : undefined);
    const blob = (s) => (typeof s === 'string' && s.length > (limit * 4) / 3 ? base64ToBytes(s) : undefined);
    let field, bytes, mimeType;
    if (c.type === 'text') { field = 'text'; bytes = text(c.text); mimeType = 'text/plain; charset=utf-8'; }
    else if (c.type === 'image' || c.type === 'audio') { field = 'data'; bytes = blob(c.data); mimeType = c.mimeType; }
    else if (c.type === 'resource' && isObject(c.resource)) {
      if (typeof c.resource.text === 'string') { field = 'resource.text'; bytes = text(c.resource.text); mimeType = c.resource.mimeType || 'text/plain; charset=utf-8'; }
      else { field = 'resource.blob'; bytes = blob(c.resource.blob); mimeType = c.resource.mimeType; }
    }
    if (!bytes || bytes.length <= limit) return undefined;
    return { field, bytes, mimeType: mimeType || 'application/octet-stream' };
  }

  // _progress sends a request's progress (spec §6.2): as a datagram where
  // the session has them (the newest value also goes on the control stream
  // before the result), else on the control stream; never after the answer.
  async _progress(m, requestId) {
    const r = this._requests.get(String(requestId));
    if (r && r.answered) return;
    if (!r || !this.datagrams || !isU32(r.id)) { await this._frame(m); return; }
    r.progress = m;
    const payload = encodePayload(m.params, this.encoding);
    if (payload.length > this.limits.maxDatagram) { r.progressOnControl = true; await this._frame(m); return; }
    r.progressOnControl = false;
    try {
      if (!this._datagramWriter) this._datagramWriter = this.wt.datagrams.writable.getWriter();
      await this._datagramWriter.write(datagramOf(CHANNEL.PROGRESS, r.id, payload));
    } catch {
      r.progressOnControl = true;
      await this._frame(m);
    }
  }

  _transportObject() {
    return {
      type: 'mcp-flow', version: '0.1', encoding: this._chosen, maxConcurrentStreams: this.limits.maxConcurrentStreams,
      datagramsSupported: true, maxFrameSize: this.limits.maxFrameSize,
    };
  }

  // _frame writes one message as one frame, in order (spec §3.1). A
  // response too large for the client's maxFrameSize becomes -32801.
  _frame(msg, isResponse = false) {
    const write = async () => {
      if (!this._control || this._finished) return;
      let body = encodePayload(msg, this.encoding);
      if (body.length > this.limits.maxFrameSize && isResponse) {
        body = encodePayload(errorOf(msg.id, CODE.TOO_LARGE, `the result (${body.length} bytes) is over maxFrameSize (${this.limits.maxFrameSize}): content too large (spec §3.1)`), this.encoding);
      }
      await this._control.writer.write(frameOf(body));
    };
    const p = this._writeChain.then(write);
    this._writeChain = p.catch(() => {});
    return p;
  }

  // _settle forgets a request once it is answered and its streams have
  // ended, and sees whether a shutdown can finish.
  _settle(r) {
    if (r.answered && r.streams.every((s) => s.ended)) this._requests.delete(String(r.id));
    this._maybeFinish();
  }

  // _startShutdown begins the drain (spec §7.2): new requests get -32006;
  // what is in flight finishes; the drain deadline cuts off the rest.
  _startShutdown(how) {
    if (this._shutdown) return;
    this._shutdown = how;
    this._drainTimer = setTimeout(() => this._abort(3, 'drain deadline passed'), this.limits.drainTimeoutMs);
  }

  // _maybeFinish finishes our side of the control stream once a shutdown
  // has nothing left in flight (spec §7.2 rule 3), and leaves the close to
  // the client: Deno's wt.close() is no clean close (see the top). The
  // drain deadline closes a client that never does.
  async _maybeFinish() {
    if (!this._shutdown || this._finished || this._requests.size > 0) return;
    if (this._shutdown === 'sent') {
      // The sender's grace before its FIN (Limits.ShutdownGrace, 50 ms).
      if (!this._graceTimer) this._graceTimer = setTimeout(() => { this._graceDone = true; this._maybeFinish(); }, 50);
      if (!this._graceDone) return;
    }
    await this._fin();
  }

  async _fin() {
    if (this._finished || !this._control) return;
    await this._writeChain;
    this._finished = true;
    await this._control.writer.close().catch(() => {});
  }

  /**
   * close ends the session as the SDK asks (McpServer.close()): $/shutdown
   * (spec §7.2, this side the sender), the drain, our FIN; the client then
   * closes. Resolves when the session has ended.
   */
  async close() {
    if (this._ended.settled) return;
    if (this.ready && !this._shutdown && !this._finished) {
      this._startShutdown('sent');
      await this._frame({ jsonrpc: '2.0', method: '$/shutdown', params: { reason: 'server closed' } }).catch(() => {});
      this._maybeFinish();
    } else {
      this._abort(5, 'closed without drain');
    }
    await this.ended;
  }

  // _abort closes the session at once with code (spec §8.2; Deno's close
  // carries it as the QUIC application close, see the top).
  _abort(code, reason) {
    if (this._closing) return;
    this._closing = true;
    try { this.wt.close({ closeCode: code, reason }); } catch { /* closed */ }
    this._end();
  }

  _end() {
    if (this._ended.settled) return;
    this._ended.settled = true;
    this._closing = true;
    clearTimeout(this._handshake); clearTimeout(this._drainTimer); clearTimeout(this._graceTimer);
    for (const r of this._requests.values()) for (const s of r.streams) s.fail('the session ended', false);
    this._requests.clear();
    this._leftOpen.clear();
    this._ended.resolve();
    if (this.onclose) this.onclose();
  }

  _deliver(m) {
    if (!this.onmessage) return;
    try { this.onmessage(m); } catch (e) { this._error(e); }
  }

  _error(e) { if (this.onerror) this.onerror(e instanceof Error ? e : new Error(String(e))); }
}

/**
 * ExecStream is one execution stream of the server's (spec §5): the QUIC
 * stream's writer once open, the bytes written in order, then close() (the
 * FIN) or fail() ($/streamError; the stream left as it is: Deno cannot
 * reset it, and abort() would FIN it).
 */
class ExecStream {
  constructor(t, r, tag, mimeType) {
    this.t = t;
    this.r = r;
    this.tag = tag;
    this.mimeType = mimeType;
    this.uri = `${STREAM_URI_PREFIX}${r.id}/${tag}`;
    this.writer = undefined;
    this.ended = false;
    this.failed = undefined;
    const d = deferred();
    this.done = d.promise;
    this._done = d;
  }

  async write(chunk) {
    if (this.failed) throw new MCPFlowError(this.failed, { code: CODE.INTERNAL, requestId: this.r.id, streamTag: this.tag });
    try {
      await this.writer.write(chunk);
    } catch (e) {
      // The client stopped reading (STOP_SENDING reaches the next write).
      this.fail(`the client stopped reading: ${e && e.message || e}`, false);
      throw e;
    }
  }

  async close() {
    if (this.failed || this.ended) return;
    await this.writer.close().catch(() => {});
    this._end();
  }

  // fail gives the stream up: $/streamError when report (spec §5.4), and
  // the stream is left unfinished.
  fail(why, report) {
    if (this.failed || this.ended) return;
    this.failed = why;
    if (report) this.t._frame({ jsonrpc: '2.0', method: '$/streamError', params: { requestId: this.r.id, streamTag: this.tag, error: why } }).catch(() => {});
    // Held until the session ends: a QUIC send stream that is garbage
    // collected is dropped, and quinn finishes a dropped stream (a FIN),
    // which would make the truncated payload look complete (seen: the
    // runner's stream.error-reset read "a FIN" once the writer was let go).
    if (this.writer) this.t._leftOpen.add(this.writer);
    this._end();
  }

  _end() {
    this.ended = true;
    this.t._openStreams--;
    this._done.resolve();
  }
}

function errorOf(id, code, message) {
  return { jsonrpc: '2.0', id, error: { code, message } };
}
