// @mcp-flow/webtransport: a client Transport for the MCP TypeScript SDK
// (v1 @modelcontextprotocol/sdk, v2 @modelcontextprotocol/client) that
// speaks MCP-Flow (docs/spec.md) over the browser's WebTransport.
//
// The SDK sees ordinary JSON-RPC messages. Underneath: a control stream of
// 4-byte length-prefixed frames (initialize in JSON, then the negotiated
// encoding, CBOR by default: §4), execution streams (8-byte header: §5)
// inlined as text or a base64 blob, or left for transport.stream() and
// resources/read, which the transport answers itself for their
// mcp-flow://stream/ URIs; progress datagrams (6-byte header: §6)
// delivered as notifications/progress, log datagrams as
// notifications/message and onlog, audio datagrams as onaudio;
// notifications/cancelled sent as $/cancel (§7.1); and $/shutdown on close
// (§7.2).
//
// With a fallback (the SDK's own StreamableHTTPClientTransport), start()
// falls back to Streamable HTTP at the same URL when the WebTransport
// session is not ready within fallbackAfter ms or fails (mcp-flow-server
// serves both at one origin: docs/spec.md §10.1); the SDK sees this one
// Transport either way, and choice / ontransport say which was taken and why.
import { FRAME_HEADER, STREAM_HEADER, DATAGRAM_HEADER, CHANNEL, CODE, MCPFlowError, base64ToBytes, bytesToBase64, concat, deferred, ByteReader, fromCBOR, binaryOf, fromUTF8, encodePayload, decodeRaw, decodePayload, frameOf } from './wire.js';

export { FRAME_HEADER, STREAM_HEADER, DATAGRAM_HEADER, CHANNEL, MCPFlowError, bytesToBase64 };
/** The largest execution stream inlined into a result by default (as the stdio front's -inline-limit). */
export const DEFAULT_INLINE_LIMIT = 8 << 20;
/** The largest execution stream that resources/read answers by default (a JSON-RPC message of the go-sdk's 16 MiB line cap); past it, -32801. */
export const DEFAULT_READ_RESOURCE_LIMIT = 16 << 20;
/** How long a stream past the inline limit waits, after its result was handed over, for stream() or resources/read before it is cancelled (ms). */
export const DEFAULT_UNREAD_STREAM_TIMEOUT_MS = 10000;
/** How long a result's ref/stream waits for its stream before it fails with -32001 (spec §5.3, Limits.StreamWait; ms). */
export const DEFAULT_STREAM_WAIT_MS = 10000;
/** How long a reset stream waits for the $/streamError that gives the reason, whatever the reset's code (spec §5.4; flow's streamErrorWait; ms). */
export const STREAM_ERROR_WAIT_MS = 100;
/** How long close() waits for the server to finish its side after $/shutdown (ms). */
export const SHUTDOWN_WAIT_MS = 3000;
/** The prefix of the URI of the resource_link that stands for an execution stream. */
export const STREAM_URI_PREFIX = 'mcp-flow://stream/';
// MAPPED_ID_TOP is the first of the ids the transport gives a request the
// SDK sent with a string id (the v2 SDK's subscriptions/listen), counting
// down: MCP-Flow ids are 32-bit integers (spec §3.2), and the SDK's own
// count up from 0.
const MAPPED_ID_TOP = 0xffffffff;
// SUBSCRIPTION_ID is the _meta key naming a subscription's request (spec §11.7).
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
/**
 * How long start() waits for the WebTransport session before it takes the
 * fallback (ms; option fallbackAfter), as Happy Eyeballs (RFC 8305) waits
 * before its second attempt. A page sees only the session ready, not the
 * QUIC handshake the Go client races on (400 ms there, spec §10.2): QUIC's
 * handshake and WebTransport's CONNECT take about 2 round trips, 3 with a
 * lost packet, so a 100 ms RTT network is ready in 200-300 ms (230-330 ms
 * measured through a relay adding 50 ms each way) and a 250 ms RTT one in
 * up to 750 ms: twice the Go client's budget keeps both. Short next to what
 * a blocked path costs without it: Chromium gives up on a QUIC handshake
 * whose packets are all dropped after about 4 s (Chromium 156), and the
 * server's handshake limit is 10 s.
 */
export const DEFAULT_FALLBACK_AFTER_MS = 800;
/** The values of the transport option, and of choice.transport (the last two). */
export const TRANSPORT = Object.freeze({ AUTO: 'auto', MCP_FLOW: 'mcp-flow', STREAMABLE_HTTP: 'streamable-http' });
/**
 * The values of the tokenIn option, and of tokenPlacement (the last two):
 * where the access token goes on the CONNECT (docs/spec.md §9.1,
 * "Browsers"). 'auto' is the Authorization header where the engine's
 * WebTransport sends headers (webTransportSendsHeaders), else the
 * access_token query parameter (RFC 6750 §2.3).
 */
export const TOKEN_IN = Object.freeze({ AUTO: 'auto', HEADER: 'header', QUERY: 'query' });
/** The URL query parameter of a token sent in the query (RFC 6750 §2.3). */
export const TOKEN_QUERY_PARAM = 'access_token';

const headerSupport = new WeakMap(); // WebTransport constructor -> boolean

/**
 * webTransportSendsHeaders reports whether WT (the page's WebTransport by
 * default) takes the headers member of its options, which sends them on
 * the CONNECT (w3c/webtransport PR 713), without a network round trip:
 * WebIDL converts a dictionary argument by reading only the members the
 * engine knows, before the constructor's own steps, so a getter on headers
 * is called exactly where the engine supports it; the http: URL then makes
 * the constructor throw (WebTransport takes https only) before any
 * connection. The answer is kept per constructor.
 */
export function webTransportSendsHeaders(WT = globalThis.WebTransport) {
  if (typeof WT !== 'function') return false;
  if (headerSupport.has(WT)) return headerSupport.get(WT);
  let read = false;
  const probe = { get headers() { read = true; return {}; } };
  try {
    const wt = new WT('http://127.0.0.1:9/', probe);
    // An engine that took the http: URL after all: abandon it at once.
    try { wt.ready.catch(() => {}); wt.closed.catch(() => {}); wt.close(); } catch { /* failed already */ }
  } catch { /* SyntaxError: not https, as expected */ }
  headerSupport.set(WT, read);
  return read;
}

// withQueryToken returns url with the access_token query parameter set to token.
function withQueryToken(url, token) {
  const u = new URL(url);
  u.searchParams.set(TOKEN_QUERY_PARAM, token);
  return u.toString();
}

// redact returns s with every occurrence of secret (as it is, and as a URL
// encodes it) replaced by REDACTED: for messages that may quote the URL of
// a CONNECT that carried the token in its query.
function redact(s, secret) {
  s = String(s);
  if (!secret) return s;
  for (const form of new Set([secret, encodeURIComponent(secret), new URLSearchParams({ t: secret }).toString().slice(2)])) {
    if (form) s = s.split(form).join('REDACTED');
  }
  return s;
}


function hexToBytes(s) {
  const clean = s.replace(/[^0-9a-fA-F]/g, '');
  if (clean.length !== 64) throw new MCPFlowError(`a certificate hash is 32 bytes (64 hex digits), got ${JSON.stringify(s)}`);
  return Uint8Array.from(clean.match(/../g), (h) => parseInt(h, 16));
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



function isText(mime) { return !!mime && (mime.startsWith('text/') || mime.startsWith('application/json')); }

function streamKey(requestId, tag) { return `${requestId}/${tag}`; }

/** streamURI names an execution stream in a resource_link: mcp-flow://stream/REQUEST/TAG. */
export function streamURI(requestId, tag) { return `${STREAM_URI_PREFIX}${requestId}/${tag}`; }

// parseStreamURI returns {requestId, tag} of a streamURI, or undefined.
function parseStreamURI(uri) {
  if (typeof uri !== 'string' || !uri.startsWith(STREAM_URI_PREFIX)) return undefined;
  const m = uri.slice(STREAM_URI_PREFIX.length).match(/^(\d+)\/(\d+)$/);
  return m ? { requestId: Number(m[1]), tag: Number(m[2]) } : undefined;
}

// finite reports whether a time limit is set (0, Infinity or a negative
// value switch it off).
function finite(ms) { return typeof ms === 'number' && ms > 0 && Number.isFinite(ms); }

/**
 * ExecStream is one execution stream of one of our requests (spec §5), from
 * the first sign of it (its header, the ref/stream of its result, its
 * $/streamError, or stream() before the result) until it is read to its end,
 * fails, or is released. owner says who reads it: 'inline' (the transport,
 * before the result is handed over), 'stream' (a ReadableStream of
 * stream()), 'resource' (resources/read), or null (nobody yet).
 */
class ExecStream {
  constructor(t, requestId, tag) {
    this.t = t;
    this.requestId = requestId;
    this.tag = tag;
    this.key = streamKey(requestId, tag);
    this.uri = streamURI(requestId, tag);
    this.mimeType = undefined;
    this.named = false; // a result's ref/stream names it
    this.owner = null;
    this.reader = null; // the network's bytes after the 8-byte header
    this.head = []; // bytes read ahead of the owner (inline or resources/read past its limit)
    this.headBytes = 0;
    this.ended = false; // read to a clean end (FIN)
    this.error = null; // an MCPFlowError once the stream failed
    this.reason = undefined; // the $/streamError text
    this.arrived = deferred();
    this.failed = deferred();
    this.noted = deferred();
    this.timers = {};
  }

  describe() { return `execution stream ${this.tag} of request ${this.requestId}`; }

  // arrive hands over the network's reader; false if the stream is not wanted.
  arrive(reader) {
    if (this.reader || this.error) return false;
    this.reader = reader;
    this.clearTimer('wait');
    this.arrived.resolve();
    return true;
  }

  // note records the server's $/streamError (spec §5.4): the stream fails at once.
  note(reason) {
    this.reason = reason;
    this.noted.resolve();
    this.fail(new MCPFlowError(`MCP-Flow: ${this.describe()} failed: ${reason}`, { code: CODE.INTERNAL, requestId: this.requestId, streamTag: this.tag }));
  }

  // fail ends the stream with err: a reader waiting for it gets err, and the
  // network stream, if it came, is cancelled (STOP_SENDING). Bytes read
  // ahead are dropped: a truncated payload is never handed over.
  fail(err) {
    if (this.error || this.ended) return false;
    this.error = err;
    this.head = []; this.headBytes = 0;
    this.clearTimer('wait'); this.clearTimer('unread');
    this.arrived.reject(err);
    this.failed.reject(err);
    if (this.reader) this.reader.cancel(err);
    return true;
  }

  setTimer(name, ms, fn) { this.clearTimer(name); if (finite(ms)) this.timers[name] = setTimeout(fn, ms); }
  clearTimer(name) { clearTimeout(this.timers[name]); delete this.timers[name]; }

  // pull returns the next chunk from the network, counted once in
  // stats.streamBytes; it throws this.error once the stream has failed,
  // whatever the network still holds.
  async pull() {
    if (this.error) throw this.error;
    if (this.ended) return { value: undefined, done: true };
    if (!this.reader) await this.arrived.promise;
    let r;
    try {
      r = await Promise.race([this.reader.read(), this.failed.promise]);
    } catch (e) {
      if (!this.error) await this.resetError(e);
      throw this.error;
    }
    if (this.error) throw this.error;
    if (r.done) { this.ended = true; return r; }
    this.t.stats.streamBytes += r.value.length;
    return r;
  }

  // next returns the bytes read ahead first, then pull()'s.
  next() {
    if (this.head.length && !this.error) {
      const value = this.head.shift(); this.headBytes -= value.length;
      return Promise.resolve({ value, done: false });
    }
    return this.pull();
  }

  // readAhead reads into head until the end (true) or past limit bytes (false).
  async readAhead(limit) {
    for (;;) {
      const { value, done } = await this.pull();
      if (done) return true;
      this.head.push(value); this.headBytes += value.length;
      if (this.headBytes > limit) return false;
    }
  }

  // takeHead returns the bytes read ahead, as one array.
  takeHead() { const b = concat(this.head, this.headBytes); this.head = []; this.headBytes = 0; return b; }

  // resetError turns a reset of the network stream into this.error. The
  // server's $/streamError is the authority (spec §5.4): it gives the reason
  // and may trail the reset a moment on the control stream, so any reset
  // waits for it, up to STREAM_ERROR_WAIT_MS, whatever code the engine
  // reports. Failing that, the reset's code: an engine that reports none
  // (WebTransport's streamErrorCode null) or 0 (Firefox 153 gives 0 for
  // every reset, whatever the server's code; the server never resets an
  // execution stream with 0) leaves it unknown, and the error is -32603.
  async resetError(e) {
    const code = resetCode(e);
    if (this.reason === undefined) {
      let timer;
      await Promise.race([this.noted.promise, new Promise((r) => { timer = setTimeout(r, STREAM_ERROR_WAIT_MS); })]);
      clearTimeout(timer);
    }
    if (this.error) return;
    const why = code !== undefined ? `reset with code ${code}` : `reset (no $/streamError within ${STREAM_ERROR_WAIT_MS} ms, and the engine gives no reset code: ${e && e.message || e})`;
    this.t.stats.streamsFailed++;
    this.fail(new MCPFlowError(`MCP-Flow: ${this.describe()} failed: ${why}`, { code: code !== undefined ? -code : CODE.INTERNAL, requestId: this.requestId, streamTag: this.tag, cause: e }));
  }
}

// resetCode returns the application code of a stream reset as the engine
// reports it (WebTransportError.streamErrorCode), or undefined when it
// reports none: null, or 0, which no MCP-Flow peer resets an execution
// stream with (spec §5.4: 32603 for a failure, 32800 for a cancel) and
// which Firefox 153 reports for every reset.
function resetCode(e) {
  const c = e && e.streamErrorCode;
  return typeof c === 'number' && c !== 0 ? c : undefined;
}

/**
 * WebTransportClientTransport implements the SDK's Transport interface over
 * MCP-Flow. One instance is one session; the SDK's Client calls start(),
 * send() and close(), and sets onmessage, onerror and onclose. Everything
 * runs on the page's event loop: no method may be called from elsewhere.
 */
export class WebTransportClientTransport {
  #token; // the token option: kept out of this.options, so that logging the transport shows no token
  #secret; // the token of this session, once start() has it: for the fallback, downloads, and redact

  constructor(url, options = {}) {
    this.url = String(url);
    const { token, ...rest } = options;
    this.options = rest;
    if (token !== undefined && token !== null && typeof token !== 'string' && typeof token !== 'function') {
      throw new MCPFlowError('token: pass the access token as a string, or a function that returns one (or a Promise of one), called at each start()');
    }
    this.#token = token ?? undefined;
    this.tokenIn = options.tokenIn ?? TOKEN_IN.AUTO;
    if (!Object.values(TOKEN_IN).includes(this.tokenIn)) throw new MCPFlowError(`tokenIn: ${JSON.stringify(this.tokenIn)} is none of 'auto', 'header' and 'query'`);
    this.tokenPlacement = undefined; // 'header' or 'query' once start() has sent a token
    this._hashes = certHashes(options.serverCertificateHashes);
    this.encodings = options.encodings || ['cbor', 'json'];
    this.inlineLimit = options.inlineLimit ?? DEFAULT_INLINE_LIMIT;
    this.readResourceLimit = options.readResourceLimit ?? DEFAULT_READ_RESOURCE_LIMIT;
    this.unreadStreamTimeout = options.unreadStreamTimeout ?? DEFAULT_UNREAD_STREAM_TIMEOUT_MS;
    this.streamWait = options.streamWait ?? DEFAULT_STREAM_WAIT_MS;
    this._WebTransport = options.WebTransport || globalThis.WebTransport;
    this.mode = options.transport ?? TRANSPORT.AUTO;
    if (!Object.values(TRANSPORT).includes(this.mode)) throw new MCPFlowError(`transport: ${JSON.stringify(this.mode)} is none of 'auto', 'mcp-flow' and 'streamable-http'`);
    this.fallbackAfter = options.fallbackAfter ?? DEFAULT_FALLBACK_AFTER_MS;
    if (typeof this.fallbackAfter !== 'number' || !(this.fallbackAfter >= 0)) throw new MCPFlowError(`fallbackAfter: ${JSON.stringify(this.fallbackAfter)} is not a number of milliseconds (Infinity: no budget)`);
    if (options.fallback !== undefined && typeof options.fallback !== 'function') throw new MCPFlowError('fallback: pass the SDK\'s StreamableHTTPClientTransport class, or a function (url) => a Transport');
    if (this.mode === TRANSPORT.STREAMABLE_HTTP && options.fallback === undefined) throw new MCPFlowError("transport 'streamable-http' needs the fallback option: the SDK's StreamableHTTPClientTransport (or a function (url) => a Transport)");
    this._fallback = options.fallback;
    this.choice = undefined; // {transport, reason, detail, ms}, once start() has chosen
    this.ontransport = undefined; // (choice) => void, once
    this.encoding = 'json';
    this.serverTransport = undefined;
    this.incomingStreamsError = undefined; // an MCPFlowError once the engine stopped delivering incoming streams (_incomingLost)
    this.stats = {
      framesSent: 0, framesReceived: 0, bytesSent: 0, bytesReceived: 0, datagramsReceived: 0,
      progressDelivered: 0, progressStale: 0, streamsReceived: 0, streamBytes: 0, streamsFailed: 0, streamsReleased: 0,
      audioDatagrams: 0, audioBytes: 0, logDatagrams: 0,
    };
    this.onframe = undefined; // (direction, message, bytes, encoding) => void: a frame log for tools such as the inspector
    this.ondatagram = undefined; // (channel, requestId, payload) => void
    this.onaudio = undefined; // ({requestId, seq, data}) => void
    this.onlog = undefined; // ({requestId, level, logger, data, datagram}) => void
    this._initId = undefined;
    this._requests = new Map(); // our requests in flight: String(id) -> {progressToken}
    this._resolving = new Set(); // String(id) of results whose streams are being read before handover
    this._cancelled = new Set(); // String(id) cancelled by notifications/cancelled: no answer goes to the SDK
    this._cancelledAnswered = new Set(); // String(id) of answered requests whose streams we gave up (_cancelAnswered; bounded)
    this._localReads = new Map(); // String(id) of resources/read answered here -> ExecStream
    this._lastProgress = new Map();
    this._streams = new Map(); // key -> ExecStream
    this._gone = new Map(); // key -> why a stream is no longer to be had (bounded)
    this._closed = false;
    this._http = undefined; // the fallback's Transport, when it was chosen
    this._stringIds = new Map(); // our integer id -> the SDK's string id (subscriptions/listen's "listen:N")
    this._ourIds = new Map(); // the SDK's string id -> our integer id
    this._nextOurId = MAPPED_ID_TOP;
    this._protocolVersion = undefined; // the SDK's setProtocolVersion, for the fallback
    this._supportedVersions = undefined; // the SDK's setSupportedProtocolVersions, for the fallback
  }

  /** sessionId is the fallback's (Streamable HTTP's Mcp-Session-Id); MCP-Flow has none. */
  get sessionId() { return this._http ? this._http.sessionId : undefined; }

  /** hasPerRequestStream is the fallback's (v2 SDK, 2026-07-28 era); unset over MCP-Flow, whose requests share the control stream. */
  get hasPerRequestStream() { return this._http ? this._http.hasPerRequestStream : undefined; }

  /** setProtocolVersion is called by the SDK after initialize; the fallback sends it as MCP-Protocol-Version. */
  setProtocolVersion(version) {
    this._protocolVersion = version;
    if (this._http && typeof this._http.setProtocolVersion === 'function') this._http.setProtocolVersion(version);
  }

  /** setSupportedProtocolVersions is called by the v2 SDK before start(); passed on to the fallback. */
  setSupportedProtocolVersions(versions) {
    this._supportedVersions = versions;
    if (this._http && typeof this._http.setSupportedProtocolVersions === 'function') this._http.setSupportedProtocolVersions(versions);
  }

  /**
   * start opens the WebTransport session and the control stream (called by
   * the SDK's connect), or the fallback: with transport 'auto' and a
   * fallback, Streamable HTTP is taken when WebTransport is missing, fails,
   * or is not ready within fallbackAfter ms; 'streamable-http' takes it at
   * once. Once the budget has passed, Streamable HTTP is the choice: the
   * WebTransport attempt is abandoned, so a session that would have become
   * ready a moment later (even before the HTTP side answers initialize)
   * loses. choice and ontransport say which was taken and why.
   */
  async start() {
    if (this._started) throw new MCPFlowError('WebTransportClientTransport already started');
    this._started = true;
    const token = await this._freshToken();
    const t0 = now();
    const auto = this.mode === TRANSPORT.AUTO && this._fallback !== undefined;
    if (this.mode === TRANSPORT.STREAMABLE_HTTP) return this._startFallback(t0, 'forced', "the transport option is 'streamable-http'");
    if (!this._WebTransport) {
      if (auto) return this._startFallback(t0, 'unavailable', 'this environment has no WebTransport');
      throw new MCPFlowError('this environment has no WebTransport' + (this.mode === TRANSPORT.AUTO ? ' (pass fallback, the SDK\'s StreamableHTTPClientTransport, to use Streamable HTTP instead)' : ''));
    }
    const opts = {};
    if (this._hashes) opts.serverCertificateHashes = this._hashes;
    let url = this.url;
    if (token !== undefined) {
      // docs/spec.md §9.1, "Browsers": the Authorization header where the
      // engine sends WebTransport headers, else the query (RFC 6750 §2.3).
      const sends = webTransportSendsHeaders(this._WebTransport);
      const place = this.tokenIn === TOKEN_IN.AUTO ? (sends ? TOKEN_IN.HEADER : TOKEN_IN.QUERY) : this.tokenIn;
      if (place === TOKEN_IN.HEADER && !sends) {
        throw new MCPFlowError("tokenIn 'header': this browser's WebTransport sends no request headers (its constructor does not take the headers option): use tokenIn 'auto' or 'query', which sends the token in the access_token query parameter");
      }
      if (place === TOKEN_IN.HEADER) opts.headers = { Authorization: `Bearer ${token}` };
      else url = withQueryToken(url, token);
      this.tokenPlacement = place;
    }
    let failure;
    let ready = false;
    try {
      this._wt = new this._WebTransport(url, opts);
      ready = await readyWithin(this._wt.ready, auto ? this.fallbackAfter : Infinity);
    } catch (e) {
      failure = e;
    }
    if (!ready && auto) {
      this._abandonWebTransport();
      if (failure) return this._startFallback(t0, 'failed', `WebTransport failed after ${Math.round(now() - t0)} ms: ${this._redact(failure && failure.message || failure)}`);
      return this._startFallback(t0, 'timeout', `no WebTransport session within fallbackAfter (${this.fallbackAfter} ms)`);
    }
    if (failure) {
      const why = this._hashes
        ? 'is the server up, and does its certificate match serverCertificateHashes (ECDSA P-256, valid under 14 days)?'
        : 'is the server up, and is its certificate trusted (or pass serverCertificateHashes)?';
      const fb = this.mode === TRANSPORT.AUTO ? ' (with fallback, the SDK\'s StreamableHTTPClientTransport, Streamable HTTP would be tried)' : '';
      // A 401 or 403 is not shown to the page: the browser reports any refused CONNECT alike.
      const auth = token !== undefined
        ? ', and does it take the access token (a 401 or 403 refuses the CONNECT, which the browser does not show: see the server\'s log)?'
        : ', and does it check no access tokens (otherwise pass the token option)?';
      throw new MCPFlowError(`MCP-Flow: cannot open a WebTransport session to ${this.url}: ${this._redact(failure && failure.message || failure)}; ${why.slice(0, -1)}${auth}${fb}`, { cause: this._safeCause(failure) });
    }
    this._choose(TRANSPORT.MCP_FLOW, this.mode === TRANSPORT.MCP_FLOW ? 'forced' : 'ready',
      this.mode === TRANSPORT.MCP_FLOW ? "the transport option is 'mcp-flow'" : `WebTransport session ready in ${Math.round(now() - t0)} ms`, t0);
    const ctrl = await this._wt.createBidirectionalStream();
    this._writer = ctrl.writable.getWriter();
    this._reader = new ByteReader(ctrl.readable);
    this._controlDone = this._readLoop();
    this._acceptStreams();
    this._readDatagrams();
    this._wt.closed.then(() => this._finish(), (e) => this._finish(e));
  }

  // _freshToken asks the token option for this session's token (a function
  // is called at each start(), so a refreshed token is used); undefined
  // without one. The token is kept only to redact it from messages and for
  // the fallback; it is never in a message of ours.
  async _freshToken() {
    const src = this.#token;
    if (src === undefined) return undefined;
    let tok;
    try {
      tok = typeof src === 'function' ? await src() : src;
    } catch (e) {
      throw new MCPFlowError(`token: the token function failed: ${e && e.message || e}`, { cause: e });
    }
    if (typeof tok !== 'string' || tok === '') throw new MCPFlowError(`token: the token function gave ${tok === '' ? 'an empty string' : typeof tok}, not an access token`);
    // RFC 6750 §2.1's b64token: what fits a header and a query unchanged.
    if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(tok)) throw new MCPFlowError('token: the access token is not an RFC 6750 b64token (letters, digits, -._~+/ and trailing =)');
    this.#secret = tok;
    return tok;
  }

  // _redact is redact() with this session's token.
  _redact(s) { return redact(s, this.#secret); }

  // _safeCause is e, or undefined when e's message or stack names the token
  // (a browser's error that quotes the URL): a cause is logged with its error.
  _safeCause(e) {
    const s = this.#secret;
    if (!s || !e) return e;
    const text = `${e && e.message || ''} ${e && e.stack || ''} ${e}`;
    return redact(text, s) === text ? e : undefined;
  }

  // _abandonWebTransport gives up the WebTransport attempt: closed while
  // connecting (the browser aborts it) or, if it got ready meanwhile, at once.
  _abandonWebTransport() {
    const wt = this._wt;
    this._wt = undefined;
    if (!wt) return;
    wt.ready.catch(() => {});
    wt.closed.catch(() => {});
    try { wt.close({ closeCode: 0, reason: 'fell back to Streamable HTTP' }); } catch { /* failed already */ }
  }

  // _startFallback makes the fallback's Transport for this.url, wires it to
  // the SDK's handlers (which are read at each call, so the SDK may set them
  // at any time), and starts it.
  async _startFallback(t0, reason, detail) {
    const f = this._fallback;
    const url = new URL(this.url);
    const token = this.#secret;
    const inner = isClass(f) ? new f(url, withAuthorization(this.options.fallbackOptions, token)) : await f(url, { token });
    if (token !== undefined) this.tokenPlacement = TOKEN_IN.HEADER;
    if (!inner || typeof inner.start !== 'function' || typeof inner.send !== 'function') throw new MCPFlowError('fallback gave no Transport (an object with start, send and close)');
    this._http = inner;
    inner.onmessage = (m, extra) => this._fromFallback(m, extra);
    // After close(), the fallback's complaints about the streams that its
    // own close aborts (SDK v1: "SSE stream disconnected: AbortError") are
    // not passed on: the session is over.
    inner.onerror = (e) => { if (!this._closed) this._error(e); };
    inner.onclose = () => this._finish();
    if (this._supportedVersions && typeof inner.setSupportedProtocolVersions === 'function') inner.setSupportedProtocolVersions(this._supportedVersions);
    if (this._protocolVersion && typeof inner.setProtocolVersion === 'function') inner.setProtocolVersion(this._protocolVersion);
    await inner.start();
    this._choose(TRANSPORT.STREAMABLE_HTTP, reason, detail, t0);
  }

  // _choose records the choice, once, and tells ontransport.
  _choose(transport, reason, detail, t0) {
    this.choice = Object.freeze({ transport, reason, detail, ms: Math.round(now() - t0) });
    if (this.ontransport) {
      try { this.ontransport(this.choice); } catch (e) { this._error(e); }
    }
  }

  // _toFallback sends a message of the SDK's over the fallback, noting the
  // progress token of each request until its answer comes or the SDK gives
  // it up: notifications/cancelled, or (v2, 2026-07-28) the abort of the
  // request's own stream, or a send that failed.
  async _toFallback(m, options) {
    let key;
    if (m && m.method === 'notifications/cancelled' && m.params) this._requests.delete(String(m.params.requestId));
    else if (m && m.method !== undefined && m.id !== undefined) {
      key = String(m.id);
      this._requests.set(key, { progressToken: m.params && m.params._meta && m.params._meta.progressToken });
      const signal = options && options.requestSignal;
      if (signal && typeof signal.addEventListener === 'function') signal.addEventListener('abort', () => this._requests.delete(key), { once: true });
    }
    try {
      await this._http.send(m, options);
    } catch (e) {
      if (key !== undefined) this._requests.delete(key);
      throw e;
    }
  }

  // _fromFallback passes a message of the fallback to the SDK; logs go to
  // onlog too. As over MCP-Flow, progress for a call that is answered or
  // that the SDK cancelled stops here: it may still be on the way when the
  // SDK forgets the token, and the SDK reports such an update as an error.
  _fromFallback(m, extra) {
    if (m && m.method === undefined && m.id !== undefined) this._requests.delete(String(m.id));
    if (m && m.method === 'notifications/progress' && m.params && m.params.progressToken !== undefined && !this._tokenLive(String(m.params.progressToken))) return;
    if (m && m.method === 'notifications/message') this._log(m.params, undefined, false);
    if (this.onmessage) {
      try { this.onmessage(m, extra); } catch (e) { this._error(e); }
    }
  }

  _encode(msg) { return encodePayload(msg, this.encoding); }

  // _decodeRaw decodes a frame or datagram payload, leaving CBOR's byte strings as they are.
  _decodeRaw(bytes) { return decodeRaw(bytes, this.encoding); }

  _decode(bytes) { return decodePayload(bytes, this.encoding); }

  async _writeFrame(msg) {
    const frame = frameOf(this._encode(msg));
    this.stats.framesSent++; this.stats.bytesSent += frame.length;
    if (this.onframe) this.onframe('out', msg, frame.length, this.encoding);
    await this._writer.write(frame);
  }

  /**
   * send passes one JSON-RPC message of the SDK's to the server. initialize
   * gains the transport object (§4.1); notifications/cancelled becomes
   * $/cancel (§7.1); resources/read of an mcp-flow://stream/ URI is
   * answered here, from the execution stream.
   */
  async send(message, options) {
    if (this._closed) throw new MCPFlowError('MCP-Flow session closed');
    if (this._http) return this._toFallback(message, options);
    let msg = message;
    if (msg.method === 'resources/read' && msg.id !== undefined && msg.params && parseStreamURI(msg.params.uri)) {
      this._readResource(msg);
      return;
    }
    if (msg.method === 'initialize' && msg.id !== undefined) {
      this._initId = msg.id;
      msg = { ...msg, params: { ...(msg.params || {}), transport: { type: 'mcp-flow', version: '0.1', encodings: this.encodings } } };
    } else if (msg.method === 'notifications/cancelled' || msg.method === '$/cancel') {
      let p = msg.params || {};
      if (this._ourIds.has(p.requestId)) p = { ...p, requestId: this._ourIds.get(p.requestId) };
      const key = String(p.requestId);
      const local = this._localReads.get(key);
      if (local) { this._localReads.delete(key); this._release(local, `${local.describe()}: its resources/read was cancelled`, CODE.CANCELLED); return; }
      // notifications/cancelled is MCP's: no answer follows (the SDK has
      // rejected the call already), so the server's -32800 stops here. A
      // $/cancel of the application's own is MCP-Flow's, and answered.
      if (msg.method === 'notifications/cancelled' && (this._requests.has(key) || this._resolving.has(key))) this._cancelled.add(key);
      // The SDK has forgotten the call's progress token: updates still on
      // the way (datagrams, or the server's before it saw $/cancel) stop here.
      const req = this._requests.get(key);
      if (req) req.progressToken = undefined;
      this._releaseRequest(p.requestId, `request ${p.requestId} was cancelled`);
      msg = { jsonrpc: '2.0', method: '$/cancel', params: { requestId: p.requestId, reason: p.reason || 'cancelled by the client' } };
    }
    if (msg.method !== undefined && typeof msg.id === 'string') {
      // A string id goes as one of ours and comes back as it was.
      const n = this._nextOurId--;
      this._stringIds.set(n, msg.id);
      this._ourIds.set(msg.id, n);
      msg = { ...msg, id: n };
    }
    if (msg.method !== undefined && msg.id !== undefined) {
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
    m = this._stringIdsBack(m);
    if (m === null) return;
    if (m.method === '$/streamError') { this._streamError(m.params || {}); return; }
    if (m.method === 'notifications/progress') { this._progress(m.params); return; }
    if (m.method === 'notifications/message') this._log(m.params, undefined, false);
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
    const refs = m.result && Array.isArray(m.result.content) ? m.result.content.filter((c) => c && c.type === 'ref/stream') : [];
    // Streams of this request that the result does not name are refused (spec §5.3).
    if (typeof m.id === 'number') {
      const named = new Set(refs.map((c) => streamKey(m.id, c.streamTag)));
      // (Not notifications/cancelled: the streams it names are still to come.)
      for (const s of this._streamsOf(m.id)) if (!named.has(s.key) && !s.named) this._release(s, `${s.describe()}: the result names no such stream`, CODE.INVALID_STREAM_REF, false);
    }
    if (this._cancelled.delete(key)) { this._releaseRequest(m.id, `request ${m.id} was cancelled`); return; } // the SDK has given up on it: our $/cancel's -32800
    if (refs.length === 0) { this._deliver(m); return; }
    const streams = refs.map((c) => {
      const s = this._stream(m.id, c.streamTag);
      s.named = true;
      s.mimeType = c.mimeType;
      if (!s.reader && !s.error && this.incomingStreamsError) this._lostStream(s);
      if (!s.reader && !s.error) {
        s.setTimer('wait', this.streamWait, () => {
          if (s.reader || s.error) return;
          this.stats.streamsFailed++;
          this._fail(s, new MCPFlowError(`MCP-Flow: no execution stream arrived for ref/stream tag ${s.tag} of request ${s.requestId} within ${this.streamWait} ms (spec §5.3)`, { code: CODE.INVALID_STREAM_REF, requestId: s.requestId, streamTag: s.tag }));
        });
      }
      return s;
    });
    this._resolving.add(key);
    this._resolveStreams(m, streams).then((r) => {
      this._resolving.delete(key);
      if (this._cancelled.delete(key)) { this._releaseRequest(m.id, `request ${m.id} was cancelled`); return; }
      this._deliver(r);
      for (const s of streams) if (this._streams.get(s.key) === s && !s.owner) this._armUnread(s);
    });
  }

  // _stream returns the ExecStream of (requestId, tag), making it.
  _stream(requestId, tag) {
    const key = streamKey(requestId, tag);
    let s = this._streams.get(key);
    if (!s) { s = new ExecStream(this, requestId, tag); this._streams.set(key, s); this._gone.delete(key); }
    return s;
  }

  _streamsOf(requestId) { return [...this._streams.values()].filter((s) => s.requestId === Number(requestId)); }

  // _forget drops a stream that is done with, remembering why for stream()'s error.
  _forget(s, why) {
    if (this._streams.get(s.key) !== s) return;
    this._streams.delete(s.key);
    s.clearTimer('wait'); s.clearTimer('unread');
    this._gone.set(s.key, why);
    if (this._gone.size > 1024) this._gone.delete(this._gone.keys().next().value);
  }

  // _fail fails a stream; one nobody reads is forgotten at once, one being
  // read when its reader has seen the error.
  _fail(s, err) {
    s.fail(err);
    if (!s.owner && !s.named) this._forget(s, err.message);
  }

  // _release gives up a stream on our side: it is cancelled (STOP_SENDING)
  // and forgotten, so that its bytes no longer hold the connection's window.
  // Unless cancelRequest is false, an answered request none of whose
  // streams is wanted any more is cancelled too (_cancelAnswered).
  _release(s, why, code, cancelRequest = true) {
    if (s.fail(new MCPFlowError(`MCP-Flow: ${why}`, { code, requestId: s.requestId, streamTag: s.tag }))) this.stats.streamsReleased++;
    if (!s.owner || s.owner === 'inline') this._forget(s, why);
    if (cancelRequest) this._cancelAnswered(s.requestId, why);
  }

  // _cancelAnswered asks the server to stop writing the streams of an
  // answered request once none of them is wanted: MCP's
  // notifications/cancelled, which resets the request's streams still being
  // written (spec §7.1) and gets no answer (one that has finished ignores
  // it). A stream's cancel (STOP_SENDING) should be enough, but Firefox 153
  // and Deno 2.9.6 send no STOP_SENDING when an incoming stream is cancelled
  // (Firefox only when the session closes; qlog, docs/INTEROP.md): the
  // server's write would wait for its stall timeout, and its drain after
  // $/shutdown (close()) on that write.
  _cancelAnswered(requestId, why) {
    const key = String(requestId);
    if (this._ended || !this._writer || this._requests.has(key) || this._resolving.has(key) || this._cancelledAnswered.has(key)) return;
    if (this._streamsOf(requestId).some((x) => !x.error && !x.ended)) return; // one is still read
    this._cancelledAnswered.add(key);
    if (this._cancelledAnswered.size > 1024) this._cancelledAnswered.delete(this._cancelledAnswered.values().next().value);
    this._writeFrame({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: this._redact(why) } }).catch(() => {});
  }

  _releaseRequest(requestId, why) {
    for (const s of this._streamsOf(requestId)) this._release(s, `${s.describe()}: ${why}`, CODE.CANCELLED);
  }

  // _armUnread cancels a stream handed over as a resource_link that nobody
  // opens within unreadStreamTimeout: unread, it would hold the
  // connection's flow-control window that later streams need.
  _armUnread(s) {
    s.setTimer('unread', this.unreadStreamTimeout, () => {
      if (s.owner) return;
      if (s.error) { this._forget(s, s.error.message); return; }
      this._release(s, `${s.describe()} (${s.uri}) was not opened within unreadStreamTimeout (${this.unreadStreamTimeout} ms) after its result was handed over, and was cancelled`, CODE.CANCELLED);
    });
  }

  // _streamError handles $/streamError {requestId, streamTag, error} (spec §5.4).
  _streamError(p) {
    const key = streamKey(p.requestId, p.streamTag);
    let s = this._streams.get(key);
    if (!s && this._requests.has(String(p.requestId))) s = this._stream(p.requestId, p.streamTag);
    if (!s || s.error || s.ended) return;
    this.stats.streamsFailed++;
    const e = p.error;
    s.note(typeof e === 'string' ? e : (e && e.message) || JSON.stringify(e));
  }

  // _resolveStreams replaces each ref/stream block, reading the streams
  // side by side: streams of at most inlineLimit bytes become text (text/*
  // or JSON that is UTF-8) or a resource with a base64 blob, as the stdio
  // front does (spec §10); larger ones a resource_link to streamURI(id,
  // tag), read with stream() or resources/read, their first bytes kept. A
  // stream that fails fails the call (-32603; as the bridges do), at once.
  async _resolveStreams(m, streams) {
    const inline = this.options.inlineStreams !== false;
    const whole = new Map();
    try {
      if (inline) {
        for (const s of streams) s.owner = 'inline';
        await Promise.all(streams.map(async (s) => { if (await s.readAhead(this.inlineLimit)) whole.set(s, s.takeHead()); }));
        for (const s of streams) s.owner = null;
      }
    } catch (e) {
      for (const s of streams) { s.owner = null; this._release(s, `${s.describe()}: another stream of its result failed`, CODE.INTERNAL); }
      const code = e.code === CODE.CANCELLED || e.code === CODE.INVALID_STREAM_REF ? e.code : CODE.INTERNAL;
      return { jsonrpc: '2.0', id: m.id, error: { code, message: e.message, data: { requestId: e.requestId, streamTag: e.streamTag } } };
    }
    const byTag = new Map(streams.map((s) => [s.tag, s]));
    const content = m.result.content.map((c) => {
      if (!c || c.type !== 'ref/stream') return c;
      const s = byTag.get(c.streamTag);
      if (!whole.has(s)) return { type: 'resource_link', uri: s.uri, name: `stream ${c.streamTag}`, mimeType: c.mimeType };
      const bytes = whole.get(s);
      this._forget(s, `${s.describe()} was inlined into its result`);
      return contentOf(s, bytes, 'content');
    });
    return { ...m, result: { ...m.result, content } };
  }

  /**
   * stream returns the raw bytes of execution stream `tag` of request
   * `requestId` (or of a resource_link's streamURI) as a ReadableStream,
   * once. The stream pulls from the network only as it is read. It errors
   * with an MCPFlowError naming the request and tag when the stream fails
   * ($/streamError, a reset, or no stream within streamWait): a truncated
   * payload never ends cleanly. The promise rejects when there is no such
   * stream to take (read already, inlined, released, or never named).
   */
  stream(requestId, tag) {
    if (this._http) return this._download(requestId);
    const u = parseStreamURI(requestId);
    if (u) ({ requestId, tag } = u);
    requestId = Number(requestId); tag = Number(tag);
    const key = streamKey(requestId, tag);
    let s = this._streams.get(key);
    if (!s && this._requests.has(String(requestId))) s = this._stream(requestId, tag); // before its result
    if (!s) return Promise.reject(new MCPFlowError(`MCP-Flow: no execution stream ${streamURI(requestId, tag)} to read: ${this._gone.get(key) || 'no result of this session names it'}`, { code: CODE.RESOURCE_NOT_FOUND, requestId, streamTag: tag }));
    if (s.owner) return Promise.reject(new MCPFlowError(`MCP-Flow: ${s.describe()} is being read already (${s.owner === 'resource' ? 'by resources/read' : 'by stream()'})`, { code: CODE.INVALID_PARAMS, requestId, streamTag: tag }));
    s.owner = 'stream';
    s.clearTimer('unread');
    const self = this;
    return Promise.resolve(new ReadableStream({
      async pull(ctl) {
        let r;
        try {
          r = await s.next();
        } catch (e) {
          self._forget(s, e.message);
          ctl.error(e);
          return;
        }
        if (r.done) { self._forget(s, `${s.describe()} was read to its end`); ctl.close(); } else ctl.enqueue(r.value);
      },
      cancel(reason) {
        s.owner = null;
        self._release(s, `${s.describe()} was cancelled by its reader${reason !== undefined ? ': ' + (reason && reason.message || reason) : ''}`, CODE.CANCELLED);
      },
    }, { highWaterMark: 0 }));
  }

  // _download is stream() over the fallback, which has no execution streams:
  // the server's HTTP front inlined each one up to its limit (text, or a
  // resource blob with an mcp-flow://stream/ uri) and made a larger one a
  // resource_link to a download (an https URL on the server), which this
  // fetches.
  async _download(uri) {
    let u;
    try { u = new URL(String(uri)); } catch { u = undefined; }
    if (!u || (u.protocol !== 'https:' && u.protocol !== 'http:')) {
      throw new MCPFlowError(`MCP-Flow: stream(${JSON.stringify(uri)}): there are no execution streams over Streamable HTTP (the fallback): the server inlined each stream into its result up to its limit (text, or a resource blob), and made larger ones resource_links to downloads, whose https uri stream() takes`, { code: CODE.RESOURCE_NOT_FOUND });
    }
    // The token goes to the server's own origin only.
    const headers = this.#secret !== undefined && u.origin === new URL(this.url).origin ? { Authorization: `Bearer ${this.#secret}` } : undefined;
    const r = await fetch(u, { cache: 'no-store', headers });
    if (!r.ok || !r.body) throw new MCPFlowError(`MCP-Flow: download ${this._redact(u)}: HTTP ${r.status} ${r.statusText}`, { code: CODE.RESOURCE_NOT_FOUND });
    return r.body;
  }

  // _readResource answers resources/read of a streamURI from the stream:
  // {contents: [{uri, mimeType, text | blob}]}, up to readResourceLimit
  // bytes; past it -32801, and the stream stays for stream(), none of its
  // bytes lost.
  async _readResource(msg) {
    const uri = msg.params.uri;
    const { requestId, tag } = parseStreamURI(uri);
    const key = streamKey(requestId, tag);
    const id = String(msg.id);
    const answer = (body) => this._deliver({ jsonrpc: '2.0', id: msg.id, ...body });
    const s = this._streams.get(key);
    if (!s || !s.named) {
      answer({ error: { code: CODE.RESOURCE_NOT_FOUND, message: `Resource not found: ${uri}: ${this._gone.get(key) || 'no result of this session names it'}`, data: { uri } } });
      return;
    }
    if (s.owner) { answer({ error: { code: CODE.INVALID_PARAMS, message: `MCP-Flow: ${s.describe()} is being read already`, data: { uri } } }); return; }
    s.owner = 'resource';
    s.clearTimer('unread');
    this._localReads.set(id, s);
    let complete, err;
    try {
      complete = await s.readAhead(this.readResourceLimit);
    } catch (e) {
      err = e;
    }
    s.owner = null;
    const cancelled = this._localReads.get(id) !== s; // the SDK gave up on it ($/cancel below)
    this._localReads.delete(id);
    if (err) {
      this._forget(s, err.message);
      if (!cancelled) answer({ error: { code: err.code === CODE.CANCELLED || err.code === CODE.INVALID_STREAM_REF ? err.code : CODE.INTERNAL, message: err.message, data: { uri } } });
      return;
    }
    if (!complete) {
      this._armUnread(s);
      if (!cancelled) answer({ error: { code: CODE.TOO_LARGE, message: `MCP-Flow: ${s.describe()} is larger than readResourceLimit (${this.readResourceLimit} bytes): read it with transport.stream('${uri}'), which streams it with backpressure`, data: { uri, readResourceLimit: this.readResourceLimit } } });
      return;
    }
    const bytes = s.takeHead();
    this._forget(s, `${s.describe()} was read by resources/read`);
    if (!cancelled) answer({ result: { contents: [contentOf(s, bytes, 'resource')] } });
  }

  async _acceptStreams() {
    const r = this._wt.incomingUnidirectionalStreams.getReader();
    for (;;) {
      let value, done;
      try {
        ({ value, done } = await r.read());
      } catch (e) {
        this._incomingLost(e);
        return;
      }
      if (done) return;
      (async () => {
        const br = new ByteReader(value);
        const hdr = await br.readExact(STREAM_HEADER).catch(() => null);
        if (!hdr) { br.cancel(); return; } // reset before its header: its $/streamError or streamWait tells
        const dv = new DataView(hdr.buffer, hdr.byteOffset);
        const requestId = dv.getUint32(0, false); const tag = dv.getUint32(4, false);
        this.stats.streamsReceived++;
        let s = this._streams.get(streamKey(requestId, tag));
        if (!s && this._requests.has(String(requestId))) s = this._stream(requestId, tag);
        // Unnamed by the answered result, released, or for no request of ours (spec §5.3).
        if (!s || !s.arrive(br)) br.cancel();
      })();
    }
  }

  // _incomingLost handles the engine's incomingUnidirectionalStreams
  // failing while the session lives (Deno 2.9.6 fails it for good when one
  // stream is reset before its WebTransport prefix was read: docs/INTEROP.md):
  // no execution stream can arrive any more, so the streams still awaited
  // fail at once, as do those of later results, and onerror says why.
  _incomingLost(e) {
    if (this._closed || this.incomingStreamsError) return;
    const why = this._redact(e && e.message || e);
    this.incomingStreamsError = new MCPFlowError(`MCP-Flow: the WebTransport engine stopped delivering incoming streams (${e && e.name || 'Error'}: ${why}): no execution stream can arrive on this session any more`, { code: CODE.INTERNAL, cause: this._safeCause(e) });
    for (const s of [...this._streams.values()]) if (!s.reader && !s.error && !s.ended) this._lostStream(s);
    this._error(this.incomingStreamsError);
  }

  // _lostStream fails a stream that can no longer arrive (_incomingLost),
  // after waiting STREAM_ERROR_WAIT_MS for its $/streamError: the stream
  // whose reset broke the engine's incoming streams has one on the way, and
  // its reason is the better error.
  async _lostStream(s) {
    let timer;
    await Promise.race([s.noted.promise, new Promise((r) => { timer = setTimeout(r, STREAM_ERROR_WAIT_MS); })]);
    clearTimeout(timer);
    if (s.reader || s.error || s.ended) return;
    this.stats.streamsFailed++;
    this._fail(s, new MCPFlowError(`MCP-Flow: ${s.describe()} cannot arrive: ${this.incomingStreamsError.message}`, { code: CODE.INTERNAL, requestId: s.requestId, streamTag: s.tag, cause: this.incomingStreamsError }));
  }

  async _readDatagrams() {
    const r = this._wt.datagrams.readable.getReader();
    for (;;) {
      const { value, done } = await r.read().catch(() => ({ done: true }));
      if (done) return;
      this.stats.datagramsReceived++;
      if (value.length < DATAGRAM_HEADER) continue;
      const channel = value[0];
      const requestId = new DataView(value.buffer, value.byteOffset).getUint32(2, false);
      let raw;
      try { raw = this._decodeRaw(value.subarray(DATAGRAM_HEADER)); } catch { continue; }
      try {
        this._datagram(channel, requestId, raw);
      } catch (e) {
        this._error(e);
      }
    }
  }

  _datagram(channel, requestId, raw) {
    if (channel === CHANNEL.AUDIO) {
      const data = raw && binaryOf(raw.data);
      if (!data) return;
      this.stats.audioDatagrams++; this.stats.audioBytes += data.length;
      const chunk = { requestId, seq: raw.seq, data };
      if (this.ondatagram) this.ondatagram(channel, requestId, { seq: raw.seq, data });
      if (this.onaudio) this.onaudio(chunk);
      return;
    }
    if (channel !== CHANNEL.PROGRESS && channel !== CHANNEL.LOG) return;
    const payload = this.encoding === 'cbor' ? fromCBOR(raw) : raw;
    if (this.ondatagram) this.ondatagram(channel, requestId, payload);
    if (channel === CHANNEL.PROGRESS) { this._progress(payload); return; }
    // A log datagram is notifications/message's params (spec §6).
    if (!payload || typeof payload !== 'object') return;
    this.stats.logDatagrams++;
    this._log(payload, requestId, true);
    this._deliver({ jsonrpc: '2.0', method: 'notifications/message', params: payload });
  }

  _log(p, requestId, datagram) {
    if (!this.onlog || !p) return;
    try {
      this.onlog({ requestId, level: p.level, logger: p.logger, data: p.data, datagram });
    } catch (e) { this._error(e); }
  }

  // _progress delivers a progress update as notifications/progress, never
  // backwards (spec §6.2: a datagram overtaken, or the control-stream twin).
  _progress(p) {
    if (!p || p.progressToken === undefined) return;
    const key = String(p.progressToken);
    // Only for a request in flight whose caller still listens (MCP: no
    // progress after the response; a cancelled call's token is forgotten):
    // the SDK reports an update for an unknown token as an error.
    if (!this._tokenLive(key)) { this.stats.progressStale++; return; }
    const last = this._lastProgress.get(key);
    if (last !== undefined && !(p.progress > last)) { this.stats.progressStale++; return; }
    this._lastProgress.set(key, p.progress);
    this.stats.progressDelivered++;
    this._deliver({ jsonrpc: '2.0', method: 'notifications/progress', params: p });
  }

  // _tokenLive reports whether a request in flight carries the progress
  // token key (and its caller has not cancelled it).
  _tokenLive(key) {
    for (const r of this._requests.values()) if (r.progressToken !== undefined && String(r.progressToken) === key) return true;
    return false;
  }

  // _stringIdsBack puts the SDK's string id back where the server names
  // one of ours: a response (then forgotten) and a subscription's
  // notifications (_meta subscriptionId, spec §11.7); null for the answer
  // to a request the SDK cancelled, which goes no further.
  _stringIdsBack(m) {
    if (this._stringIds.size === 0) return m;
    if (m.method === undefined && this._stringIds.has(m.id)) {
      const id = this._stringIds.get(m.id);
      this._stringIds.delete(m.id);
      this._ourIds.delete(id);
      // _requests and _cancelled know it by our id.
      const key = String(m.id);
      if (this._cancelled.delete(key)) { this._requests.delete(key); return null; } // the SDK gave it up: our $/cancel's -32800
      this._requests.delete(key);
      return { ...m, id };
    }
    const meta = m.params && m.params._meta;
    if (m.method !== undefined && meta && this._stringIds.has(meta[SUBSCRIPTION_ID])) {
      return { ...m, params: { ...m.params, _meta: { ...meta, [SUBSCRIPTION_ID]: this._stringIds.get(meta[SUBSCRIPTION_ID]) } } };
    }
    return m;
  }

  _deliver(m) {
    if (this.onmessage) {
      try { this.onmessage(m); } catch (e) { this._error(e); }
    }
  }

  _error(e) { if (this.onerror) this.onerror(e); }

  /**
   * close ends the session gracefully (spec §7.2). Execution streams that
   * nobody has opened are cancelled first: the server's drain waits for
   * every stream it writes, and nobody would read these. Then $/shutdown,
   * the server's FIN on the control stream (at once when nothing is in
   * flight; at most SHUTDOWN_WAIT_MS), our FIN, and the WebTransport close.
   * onclose follows.
   */
  async close() {
    if (this._closed) return;
    this._closed = true;
    if (this._http) {
      // The server's HTTP session (and its MCP-Flow session behind the
      // front) ends now rather than at its idle timeout.
      if (typeof this._http.terminateSession === 'function' && this._http.sessionId !== undefined) await this._http.terminateSession().catch(() => {});
      await this._http.close().catch(() => {});
      this._finish();
      return;
    }
    for (const s of [...this._streams.values()]) if (s.named && !s.owner) this._release(s, `${s.describe()}: the client closed the session before it was read`, CODE.CANCELLED);
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
    const why = err ? this._redact(err.message || err) : '';
    const gone = new MCPFlowError('MCP-Flow session ended' + (err ? ': ' + why : ''), { cause: this._safeCause(err) });
    for (const s of [...this._streams.values()]) { s.fail(gone); s.clearTimer('wait'); s.clearTimer('unread'); }
    if (err && this.onerror && !this._shutdownReceived) this._error(new MCPFlowError('MCP-Flow session lost: ' + why, { cause: this._safeCause(err) }));
    if (this.onclose) this.onclose();
  }
}

const now = () => (globalThis.performance ? performance.now() : Date.now());

// readyWithin resolves true when ready resolves within ms, false when ms
// pass first (Infinity: never), and rejects when ready rejects first.
function readyWithin(ready, ms) {
  if (!Number.isFinite(ms)) return ready.then(() => true);
  let timer;
  return Promise.race([ready.then(() => true), new Promise((r) => { timer = setTimeout(() => r(false), ms); })])
    .finally(() => clearTimeout(timer));
}

// withAuthorization returns the fallback's options with the token in the
// Authorization header of every request (requestInit.headers of the SDK's
// StreamableHTTPClientTransport, v1 and v2), or options as they are
// without a token. Headers become a plain object: the SDKs spread them.
function withAuthorization(options, token) {
  if (token === undefined) return options;
  const o = options && typeof options === 'object' ? options : {};
  const init = o.requestInit || {};
  const headers = Object.fromEntries(new Headers(init.headers || {}));
  return { ...o, requestInit: { ...init, headers: { ...headers, authorization: `Bearer ${token}` } } };
}

// isClass reports whether f is a Transport class (StreamableHTTPClientTransport)
// rather than a factory function: its prototype has send.
function isClass(f) { return !!f.prototype && typeof f.prototype.send === 'function'; }

// contentOf turns a whole stream into MCP content: text for text/* and JSON
// that is UTF-8, else base64; as a content block ('content': text or an
// embedded resource) or as resources/read contents ('resource').
function contentOf(s, bytes, as) {
  let text;
  if (isText(s.mimeType)) { try { text = fromUTF8.decode(bytes); } catch { text = undefined; } }
  const resource = { uri: s.uri, mimeType: s.mimeType || 'application/octet-stream' };
  if (as === 'resource') return text !== undefined ? { ...resource, text } : { ...resource, blob: bytesToBase64(bytes) };
  return text !== undefined ? { type: 'text', text } : { type: 'resource', resource: { ...resource, blob: bytesToBase64(bytes) } };
}
