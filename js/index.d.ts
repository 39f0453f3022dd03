// Types of @mcp-flow/webtransport. The transport satisfies the Transport
// interface of @modelcontextprotocol/sdk 1.x (shared/transport.d.ts) and of
// @modelcontextprotocol/client 2.x; it is written against their shapes
// rather than importing them, so that either SDK can be used.

/** A JSON-RPC 2.0 message as the SDKs pass it. */
export type JSONRPCMessage = {
  jsonrpc: '2.0';
  id?: string | number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
};

/** A certificate hash: hex (64 digits) or base64 of a SHA-256, its bytes, or WebTransport's own form. */
export type CertificateHash = string | Uint8Array | { algorithm: 'sha-256'; value: BufferSource };

export interface WebTransportClientTransportOptions {
  /** Pin the server's certificate (ECDSA P-256, valid under 14 days), as mcp-flow-server prints it. */
  serverCertificateHashes?: CertificateHash | CertificateHash[];
  /** Encodings in order of preference (spec §4): 'cbor', 'json'. Default ['cbor', 'json']. */
  encodings?: Array<'cbor' | 'json'>;
  /**
   * An OAuth access token for a server that checks them (docs/spec.md §9.1):
   * the token, or a function that returns it (or a Promise of it), called at
   * each start() so that a refreshed token is used. Where it goes is
   * `tokenIn`'s choice. The token is never in a message or log of the
   * transport's, nor in `options`; the fallback (Streamable HTTP) sends it
   * in its Authorization header, and downloads from the server's own origin
   * do too. A refused token is a failed start(): browsers show the page no
   * 401, only that the session could not be opened.
   */
  token?: string | (() => string | Promise<string>);
  /**
   * Where the token goes on the CONNECT (docs/spec.md §9.1, "Browsers"):
   * 'auto' (the default) in the Authorization header where the browser's
   * WebTransport sends headers (webTransportSendsHeaders(): Chromium 156
   * only with experimental web platform features, Firefox ESR 153 not), and
   * elsewhere in the access_token query parameter (RFC 6750 §2.3; the
   * server must allow it: mcp-flow-server does by default); 'header' fails
   * start() where the browser sends no headers; 'query' always the query.
   */
  tokenIn?: TokenIn;
  /**
   * Execution streams of at most this many bytes are inlined into the result
   * (default DEFAULT_INLINE_LIMIT, 8 MiB); larger ones become resource_links
   * (uri mcp-flow://stream/REQUEST/TAG), read with readResource or stream().
   */
  inlineLimit?: number;
  /** false: never inline; every execution stream becomes a resource_link. */
  inlineStreams?: boolean;
  /**
   * The largest execution stream that `client.readResource({uri})` of a
   * stream's uri answers, in bytes (default DEFAULT_READ_RESOURCE_LIMIT,
   * 16 MiB; the whole stream is held in memory, and base64 in the result).
   * Past it the request fails with -32801, saying to use stream(); none of the
   * stream's bytes are lost by that, and stream() still gives all of them.
   */
  readResourceLimit?: number;
  /**
   * Milliseconds that a stream handed over as a resource_link may go unopened
   * (by stream() or readResource) after its result was handed over, before
   * the transport cancels it (STOP_SENDING) and forgets it (default
   * DEFAULT_UNREAD_STREAM_TIMEOUT_MS, 10 s; 0 or Infinity: never). Unread, a
   * stream holds the connection's flow-control window, which the browser
   * shares among all streams, the control stream included: a few unread large
   * streams stop every later result and stream until they are read or
   * cancelled. stream() or readResource after the timeout fails, naming it.
   */
  unreadStreamTimeout?: number;
  /**
   * Milliseconds a result's ref/stream waits for its stream to arrive before
   * that content fails with -32001 (spec §5.3; default DEFAULT_STREAM_WAIT_MS,
   * 10 s). A $/streamError for it fails it at once.
   */
  streamWait?: number;
  /** The WebTransport constructor (default globalThis.WebTransport; e.g. @fails-components/webtransport's in Node). */
  WebTransport?: unknown;
  /**
   * Which transport to use: 'auto' (the default) opens MCP-Flow over
   * WebTransport and, when `fallback` is given, takes Streamable HTTP at the
   * same URL if WebTransport is missing, fails, or is not ready within
   * `fallbackAfter` ms; 'mcp-flow' uses WebTransport only (as without
   * `fallback`); 'streamable-http' uses the fallback only (it needs `fallback`).
   */
  transport?: TransportOption;
  /**
   * The SDK's own Streamable HTTP client transport, for the fallback: its
   * class, constructed as `new fallback(new URL(url), fallbackOptions)`
   * (v2: `StreamableHTTPClientTransport` of '@modelcontextprotocol/client';
   * v1: of '@modelcontextprotocol/sdk/client/streamableHttp.js'), or a function
   * `(url: URL) => Transport | Promise<Transport>`. The package bundles no SDK,
   * so the page passes the one it uses. Without it, there is no fallback.
   */
  fallback?: FallbackTransportClass | ((url: URL, auth: { token?: string }) => FallbackTransport | Promise<FallbackTransport>);
  /**
   * The second argument of the fallback class's constructor (its options:
   * requestInit, authProvider, fetch, …). With `token`, its
   * requestInit.headers gain `authorization: Bearer <token>`; a function
   * fallback is passed the token instead.
   */
  fallbackOptions?: unknown;
  /**
   * Milliseconds that 'auto' waits for the WebTransport session before it
   * takes the fallback (default DEFAULT_FALLBACK_AFTER_MS, 800; Infinity: wait
   * for WebTransport to succeed or fail). A failure before then falls back at
   * once.
   */
  fallbackAfter?: number;
}

/** The transport option. */
export type TransportOption = 'auto' | 'mcp-flow' | 'streamable-http';

/** The tokenIn option; tokenPlacement is one of the last two. */
export type TokenIn = 'auto' | 'header' | 'query';

/**
 * The SDK transport used as the fallback: the Transport interface of either
 * SDK (its messages typed loosely, as each SDK types them its own way).
 */
export interface FallbackTransport {
  start(): Promise<void>;
  send(message: any, options?: any): Promise<void>;
  close(): Promise<void>;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: any, extra?: any) => void;
  sessionId?: string;
  hasPerRequestStream?: boolean;
  setProtocolVersion?(version: string): void;
  setSupportedProtocolVersions?(versions: string[]): void;
  terminateSession?(): Promise<void>;
}

/** A class such as the SDKs' StreamableHTTPClientTransport. */
export type FallbackTransportClass = new (url: URL, options?: any) => FallbackTransport;

/**
 * Which transport start() took, and why; `transport.choice` and the one
 * `ontransport` event carry it.
 */
export interface TransportChoice {
  transport: 'mcp-flow' | 'streamable-http';
  /**
   * 'ready': the WebTransport session was ready within the budget (or, with
   * no fallback, at all); 'forced': the transport option named it;
   * 'timeout': not ready within fallbackAfter; 'failed': WebTransport failed
   * before the budget; 'unavailable': no WebTransport in this environment.
   */
  reason: 'ready' | 'forced' | 'timeout' | 'failed' | 'unavailable';
  /** The same in words, with WebTransport's error when it failed. */
  detail: string;
  /** Milliseconds from start() to the choice. */
  ms: number;
}

/** Counters of one session. */
export interface MCPFlowStats {
  framesSent: number;
  framesReceived: number;
  bytesSent: number;
  bytesReceived: number;
  /** Datagrams of every channel. */
  datagramsReceived: number;
  progressDelivered: number;
  progressStale: number;
  /** Execution streams whose header arrived. */
  streamsReceived: number;
  /** Bytes of execution streams taken from the network (each byte once, whoever read it). */
  streamBytes: number;
  /** Execution streams the server failed: $/streamError, a reset, or none within streamWait. */
  streamsFailed: number;
  /** Execution streams given up on this side: unread past unreadStreamTimeout, unread at close(), cancelled calls, cancelled readers. */
  streamsReleased: number;
  /** Audio datagrams (channel 2) and the bytes of their data. */
  audioDatagrams: number;
  audioBytes: number;
  /** Log datagrams (channel 3). */
  logDatagrams: number;
}

/** The server's transport object of the initialize result (spec §4.1). */
export interface ServerTransport {
  type: 'mcp-flow';
  version: string;
  encoding: string;
  maxConcurrentStreams: number;
  datagramsSupported: boolean;
  maxFrameSize?: number;
}

/** One audio datagram (channel 2, spec §6): mcp-flow-server's tone sends PCM s16le mono, its format in the call's result. */
export interface AudioChunk {
  /** The request the datagram's header names. */
  requestId: number;
  /** The payload's seq: datagrams may be lost or reordered. */
  seq: number;
  /** The payload's data (a CBOR byte string, or base64 in JSON), as bytes. */
  data: Uint8Array;
}

/** One of the server's log messages: the params of notifications/message. */
export interface LogMessage {
  /** The request a log datagram's header names; undefined for notifications/message on the control stream. */
  requestId?: number;
  level: 'debug' | 'info' | 'notice' | 'warning' | 'error' | 'critical' | 'alert' | 'emergency' | string;
  logger?: string;
  data: unknown;
  /** true when it came as a log datagram (channel 3), false on the control stream. */
  datagram: boolean;
}

export declare class MCPFlowError extends Error {
  /** The JSON-RPC code (or the negated stream reset code), when there is one. */
  code?: number;
  /** The request and stream tag of the execution stream the error is about, when it is about one. */
  requestId?: number;
  streamTag?: number;
}

/**
 * An SDK client transport over MCP-Flow: `await client.connect(new WebTransportClientTransport(url, {serverCertificateHashes}))`.
 *
 * Execution streams (spec §5). A result's `ref/stream` blocks are read before
 * the result is handed over, side by side: a stream of at most inlineLimit
 * bytes becomes `text` (text/* and JSON that is UTF-8) or a `resource` with a
 * base64 blob; a larger one a `resource_link` with uri
 * mcp-flow://stream/REQUEST/TAG, whose first bytes are kept for its reader.
 * A stream that fails before the handover ($/streamError, a reset, or none
 * within streamWait) fails the call: the SDK gets a JSON-RPC error (-32603,
 * or -32001 for a stream that never came) naming the request and tag, as the
 * bridges do. A resource_link is read with `client.readResource({uri})`
 * (answered by the transport, never sent to the server; up to
 * readResourceLimit) or `transport.stream(uri)`.
 *
 * Cancellation: the SDKs' AbortSignal sends notifications/cancelled, which
 * goes as `$/cancel` (spec §7.1); the SDK rejects the call with the abort's
 * reason, and the server's -32800 stops in the transport (MCP: no answer
 * follows notifications/cancelled). An application that speaks JSON-RPC
 * itself may send `$/cancel {requestId, reason}` and gets the server's answer
 * (-32800, or the result if it came first). Either way the request's streams
 * are released.
 */
export declare class WebTransportClientTransport {
  constructor(url: string | URL, options?: WebTransportClientTransportOptions);
  start(): Promise<void>;
  /** The tokenIn option. */
  readonly tokenIn: TokenIn;
  /** Where start() put the token: 'header' or 'query' (the fallback: 'header'); undefined without a token. */
  readonly tokenPlacement?: 'header' | 'query';
  send(message: JSONRPCMessage, options?: unknown): Promise<void>;
  /**
   * Ends the session gracefully (spec §7.2): streams handed over as
   * resource_links that nobody opened are cancelled first (the server's drain
   * would otherwise wait for them), then $/shutdown, the server's FIN (at
   * once when nothing is in flight; at most SHUTDOWN_WAIT_MS), our FIN and the
   * WebTransport close; onclose follows. With nothing in flight it returns in
   * a few milliseconds.
   */
  close(): Promise<void>;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: unknown) => void;
  /**
   * The fallback's session id (Streamable HTTP's Mcp-Session-Id); undefined
   * over MCP-Flow, which has none (and before initialize, when the SDK would
   * otherwise skip it).
   */
  readonly sessionId?: string;
  /** The fallback's (SDK v2 in the 2026-07-28 era: a stream per request); undefined over MCP-Flow. */
  readonly hasPerRequestStream?: boolean;
  /** Called by the SDK after initialize; passed on to the fallback (its MCP-Protocol-Version header). */
  setProtocolVersion(version: string): void;
  /** Called by SDK v2 before start(); passed on to the fallback. */
  setSupportedProtocolVersions(versions: string[]): void;
  /** The transport option ('auto' unless given). */
  readonly mode: TransportOption;
  /** fallbackAfter, in ms. */
  readonly fallbackAfter: number;
  /** Which transport start() took and why; undefined until then. */
  readonly choice?: TransportChoice;
  /**
   * Called once, when start() has chosen (before the SDK's initialize is
   * sent): log it, or show it. A throw goes to onerror.
   */
  ontransport?: (choice: TransportChoice) => void;
  /**
   * The raw bytes of an execution stream, once: by the uri of the
   * resource_link that stands for it (mcp-flow://stream/REQUEST/TAG), or by
   * request id and stream tag.
   *
   * Backpressure: the ReadableStream has a high-water mark of 0, so it takes
   * bytes from the network only when its reader asks for them. Bytes not yet
   * asked for wait in QUIC's flow-control windows: the stream's own and the
   * connection's, which all streams and the control stream share. A slow
   * reader slows the server down rather than filling memory; a reader that
   * stops reading holds the server (whose stall timeout, 30 s by default,
   * resets the stream) and the shared window. `reader.cancel()` gives the
   * stream up at once (STOP_SENDING).
   *
   * The stream errors with an MCPFlowError naming the request and tag when
   * the server fails it: at once on its $/streamError, on a reset, or when
   * it has not come within streamWait. A truncated payload never ends
   * cleanly. The promise rejects when there is no such stream to take: read
   * already (by stream(), readResource, or inlined), released (unread past
   * unreadStreamTimeout, or its call cancelled), or named by no result.
   *
   * Over the fallback there are no execution streams: the server's HTTP
   * front inlined each stream up to its limit (text, or a resource blob
   * whose uri is mcp-flow://stream/…) and made a larger one a resource_link
   * to a download (an https URL on the server). stream() of such a link's uri
   * fetches it (the response's body, no backpressure beyond fetch's); any
   * other argument rejects, saying so.
   */
  stream(requestIdOrURI: number | string, tag?: number): Promise<ReadableStream<Uint8Array>>;
  /** The negotiated encoding ('json' until initialize is answered; 'json' over the fallback). */
  readonly encoding: string;
  /** The server's transport object, once initialized (MCP-Flow only: undefined over the fallback). */
  readonly serverTransport?: ServerTransport;
  /** MCP-Flow's counters; they stay 0 over the fallback. */
  readonly stats: MCPFlowStats;
  /**
   * Set once the engine's incomingUnidirectionalStreams failed while the
   * session lived (Deno 2.9.6, when a stream is reset before its
   * WebTransport prefix was read): no execution stream can arrive any more;
   * the streams still awaited fail, and onerror is told.
   */
  readonly incomingStreamsError?: MCPFlowError;
  /** A frame log: every control frame in or out, decoded, with its size in bytes and the encoding it used (MCP-Flow only). */
  onframe?: (direction: 'in' | 'out', message: JSONRPCMessage | JSONRPCMessage[], bytes: number, encoding: string) => void;
  /** Every progress, audio and log datagram: channel (CHANNEL), request id of its header, decoded payload (audio's data as bytes). MCP-Flow only. */
  ondatagram?: (channel: number, requestId: number, payload: unknown) => void;
  /** Every audio datagram (channel 2). Datagrams may be lost: seq tells which. MCP-Flow only: Streamable HTTP has no datagrams. */
  onaudio?: (chunk: AudioChunk) => void;
  /**
   * Every log message of the server: log datagrams (channel 3; also handed to
   * the SDK as notifications/message, whose params they carry) and
   * notifications/message on the control stream (which the SDK gets as it
   * is), or over the fallback (datagram false, as it is on the control stream).
   */
  onlog?: (message: LogMessage) => void;
}

/** The uri of the resource_link that stands for an execution stream. */
export declare function streamURI(requestId: number, tag: number): string;
export declare function bytesToBase64(b: Uint8Array): string;
/** 8 MiB. */
export declare const DEFAULT_INLINE_LIMIT: number;
/** 16 MiB. */
export declare const DEFAULT_READ_RESOURCE_LIMIT: number;
/** 10,000 ms. */
export declare const DEFAULT_UNREAD_STREAM_TIMEOUT_MS: number;
/** 10,000 ms (spec §5.3). */
export declare const DEFAULT_STREAM_WAIT_MS: number;
/** 100 ms: how long a reset stream waits for the $/streamError that says why, whatever the reset's code (spec §5.4). */
export declare const STREAM_ERROR_WAIT_MS: number;
/** 3,000 ms. */
export declare const SHUTDOWN_WAIT_MS: number;
/** 800 ms: how long 'auto' waits for WebTransport before it takes the fallback. */
export declare const DEFAULT_FALLBACK_AFTER_MS: number;
export declare const TRANSPORT: Readonly<{ AUTO: 'auto'; MCP_FLOW: 'mcp-flow'; STREAMABLE_HTTP: 'streamable-http' }>;
export declare const TOKEN_IN: Readonly<{ AUTO: 'auto'; HEADER: 'header'; QUERY: 'query' }>;
/** The query parameter of a token in the URL (RFC 6750 §2.3). */
export declare const TOKEN_QUERY_PARAM: 'access_token';
/**
 * Whether the browser's WebTransport (or WT) takes the constructor's
 * headers option and so sends headers on the CONNECT (w3c/webtransport PR
 * 713): found without a connection, by whether the constructor reads the
 * member (WebIDL reads only the dictionary members an engine knows).
 */
export declare function webTransportSendsHeaders(WT?: unknown): boolean;
export declare const STREAM_URI_PREFIX: 'mcp-flow://stream/';
export declare const CHANNEL: Readonly<{ PROGRESS: 1; AUDIO: 2; LOG: 3 }>;
export declare const FRAME_HEADER: 4;
export declare const STREAM_HEADER: 8;
export declare const DATAGRAM_HEADER: 6;
