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
  /** Execution streams of at most this many bytes are inlined into the result (default 8 MiB); larger ones become resource_links read with stream(). */
  inlineLimit?: number;
  /** false: never inline; every execution stream becomes a resource_link read with stream(). */
  inlineStreams?: boolean;
  /** The WebTransport constructor (default globalThis.WebTransport; e.g. @fails-components/webtransport's in Node). */
  WebTransport?: unknown;
}

/** Counters of one session. */
export interface MCPFlowStats {
  framesSent: number;
  framesReceived: number;
  bytesSent: number;
  bytesReceived: number;
  datagramsReceived: number;
  progressDelivered: number;
  progressStale: number;
  streamsReceived: number;
  streamBytes: number;
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

export declare class MCPFlowError extends Error {
  /** The JSON-RPC code or stream reset code, when there is one. */
  code?: number;
}

/** An SDK client transport over MCP-Flow: `await client.connect(new WebTransportClientTransport(url, {serverCertificateHashes}))`. */
export declare class WebTransportClientTransport {
  constructor(url: string | URL, options?: WebTransportClientTransportOptions);
  start(): Promise<void>;
  send(message: JSONRPCMessage, options?: unknown): Promise<void>;
  /** $/shutdown, the server's FIN (at most SHUTDOWN_WAIT_MS), then the WebTransport close; onclose follows. */
  close(): Promise<void>;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: unknown) => void;
  /** MCP-Flow has no session id; always undefined (the SDK would otherwise skip initialize). */
  sessionId?: string;
  /**
   * The raw bytes of an execution stream, once: by request id and stream tag,
   * or by the uri of the resource_link that stands for it
   * (mcp-flow://stream/REQUEST/TAG). Errors with an MCPFlowError when the
   * server fails the stream ($/streamError): a truncated payload never ends
   * cleanly.
   */
  stream(requestIdOrURI: number | string, tag?: number): Promise<ReadableStream<Uint8Array>>;
  /** The negotiated encoding ('json' until initialize is answered). */
  readonly encoding: string;
  /** The server's transport object, once initialized. */
  readonly serverTransport?: ServerTransport;
  readonly stats: MCPFlowStats;
  /** A frame log: every control frame in or out, decoded, with its size in bytes and the encoding it used. */
  onframe?: (direction: 'in' | 'out', message: JSONRPCMessage | JSONRPCMessage[], bytes: number, encoding: string) => void;
  /** Every progress datagram: channel, request id of its header, decoded payload. */
  ondatagram?: (channel: number, requestId: number, payload: unknown) => void;
}

/** The uri of the resource_link that stands for an execution stream. */
export declare function streamURI(requestId: number, tag: number): string;
export declare function bytesToBase64(b: Uint8Array): string;
export declare const DEFAULT_INLINE_LIMIT: number;
export declare const SHUTDOWN_WAIT_MS: number;
export declare const CHANNEL: Readonly<{ PROGRESS: 1; AUDIO: 2; LOG: 3 }>;
export declare const FRAME_HEADER: 4;
export declare const STREAM_HEADER: 8;
export declare const DATAGRAM_HEADER: 6;
