// wire.js: the MCP-Flow wire formats and codecs (docs/spec.md §3 and §4)
// that both sides of this package use: the client transport (index.js, the
// browser's) and the server transport (server.js, Deno's). Frames (a 4-byte
// big-endian length, §3.1), execution stream headers (8 bytes, §3.2),
// datagram headers (6 bytes, §3.3), JSON and CBOR payloads (cbor-x; §4.4:
// byte strings read back as base64 text), and a reader of exact byte counts.
import { Encoder, Tag, decode as cborDecode } from 'cbor-x';

const cbor = new Encoder({ useRecords: false, mapsAsObjects: true, tagUint8Array: false, largeBigIntToFloat: false });
export const utf8 = new TextEncoder();
export const fromUTF8 = new TextDecoder('utf-8', { fatal: true });

/** Wire constants (spec §3). */
export const FRAME_HEADER = 4;
export const STREAM_HEADER = 8;
export const DATAGRAM_HEADER = 6;
export const CHANNEL = Object.freeze({ PROGRESS: 1, AUDIO: 2, LOG: 3 });

/** JSON-RPC codes (spec §8.1). */
export const CODE = Object.freeze({
  INVALID_PARAMS: -32602, INTERNAL: -32603, INVALID_STREAM_REF: -32001, RESOURCE_NOT_FOUND: -32002,
  CANCELLED: -32800, TOO_LARGE: -32801,
  PARSE: -32700, INVALID_REQUEST: -32600, METHOD_NOT_FOUND: -32601, STREAM_LIMIT: -32000, ENCODING_MISMATCH: -32003,
  DATAGRAMS_UNSUPPORTED: -32004, TOO_MANY_REQUESTS: -32005, SHUTTING_DOWN: -32006,
});

/**
 * MCPFlowError is an error of this transport; code is the JSON-RPC code or
 * stream reset code when there is one, and requestId and streamTag name the
 * execution stream it is about, when it is about one.
 */
export class MCPFlowError extends Error {
  constructor(message, { code, cause, requestId, streamTag } = {}) {
    super(message, cause ? { cause } : undefined);
    this.name = 'MCPFlowError';
    if (code !== undefined) this.code = code;
    if (requestId !== undefined) this.requestId = requestId;
    if (streamTag !== undefined) this.streamTag = streamTag;
  }
}

export function base64ToBytes(s) {
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

export function concat(chunks, total) {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) { out.set(c, off); off += c.length; }
  return out;
}

// deferred is a promise with its resolve and reject; a rejection nobody
// awaits is no unhandled rejection.
export function deferred() {
  let resolve, reject;
  const promise = new Promise((a, b) => { resolve = a; reject = b; });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

// ByteReader reads a ReadableStream of Uint8Array: exact byte counts (the
// headers), then what comes, buffered bytes first.
export class ByteReader {
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
  // read returns the next chunk as ReadableStreamDefaultReader.read does.
  read() {
    if (this.chunks.length) { const value = this.chunks.shift(); this.size -= value.length; return Promise.resolve({ value, done: false }); }
    return this.reader.read();
  }
  // cancel stops reading: STOP_SENDING for a WebTransport stream.
  cancel(reason) { this.chunks = []; this.size = 0; return this.reader.cancel(reason).catch(() => {}); }
}

// fromCBOR gives a decoded CBOR value the shape of its JSON twin (spec
// §4.4): byte strings (tag 22 or untagged) become the base64 strings that
// MCP's JSON has for data and blob, tag 21 base64url and tag 23 hex; the
// self-described tag 55799 is dropped.
export function fromCBOR(v) {
  if (v instanceof Uint8Array) return bytesToBase64(v);
  if (v instanceof Tag) {
    if (v.value instanceof Uint8Array) {
      if (v.tag === 21) return bytesToBase64(v.value).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
      if (v.tag === 23) return Array.from(v.value, (b) => b.toString(16).padStart(2, '0')).join('');
      return bytesToBase64(v.value);
    }
    return fromCBOR(v.value);
  }
  if (Array.isArray(v)) { for (let i = 0; i < v.length; i++) v[i] = fromCBOR(v[i]); return v; }
  if (v && typeof v === 'object') { for (const k of Object.keys(v)) v[k] = fromCBOR(v[k]); return v; }
  return v;
}

// binaryOf returns the bytes of a binary member as it was decoded: a CBOR
// byte string (tagged or not) or a base64 string (JSON); else undefined.
export function binaryOf(v) {
  if (v instanceof Tag) v = v.value;
  if (v instanceof Uint8Array) return v.slice();
  if (typeof v === 'string') { try { return base64ToBytes(v); } catch { return undefined; } }
  return undefined;
}

// jsonShape gives v the shape JSON.stringify would: members that are
// undefined (the v1 SDK sends `params: undefined`) are left out, and
// undefined array elements become null, so CBOR never carries undefined
// (spec §4.4 refuses it).
export function jsonShape(v) {
  if (Array.isArray(v)) return v.map((x) => (x === undefined ? null : jsonShape(x)));
  if (v && typeof v === 'object' && !(v instanceof Uint8Array)) {
    if (typeof v.toJSON === 'function') return jsonShape(v.toJSON());
    const o = {};
    for (const k of Object.keys(v)) if (v[k] !== undefined && typeof v[k] !== 'function') o[k] = jsonShape(v[k]);
    return o;
  }
  return v;
}

// encodePayload encodes a JSON-RPC message (or batch, or a datagram's
// payload) in encoding ('json' or 'cbor'; §4.4).
export function encodePayload(msg, encoding) {
  return encoding === 'cbor' ? cbor.encode(jsonShape(msg)) : utf8.encode(JSON.stringify(msg));
}

// decodeRaw decodes a frame or datagram payload, leaving CBOR's byte strings as they are.
export function decodeRaw(bytes, encoding) {
  if (encoding === 'cbor') return cborDecode(bytes);
  return JSON.parse(fromUTF8.decode(bytes));
}

// decodePayload decodes a frame's payload into its JSON shape (§4.4).
export function decodePayload(bytes, encoding) {
  const v = decodeRaw(bytes, encoding);
  return encoding === 'cbor' ? fromCBOR(v) : v;
}

// frameOf returns body behind its 4-byte big-endian length (§3.1).
export function frameOf(body) {
  const frame = new Uint8Array(FRAME_HEADER + body.length);
  new DataView(frame.buffer).setUint32(0, body.length, false);
  frame.set(body, FRAME_HEADER);
  return frame;
}

// streamHeader returns the 8-byte header of an execution stream (§3.2).
export function streamHeader(requestId, tag) {
  const h = new Uint8Array(STREAM_HEADER);
  const dv = new DataView(h.buffer);
  dv.setUint32(0, requestId, false);
  dv.setUint32(4, tag, false);
  return h;
}

// datagramOf returns payload behind a 6-byte datagram header (§3.3):
// channel, flags 0, the request id (0: session-wide).
export function datagramOf(channel, requestId, payload) {
  const d = new Uint8Array(DATAGRAM_HEADER + payload.length);
  d[0] = channel;
  new DataView(d.buffer).setUint32(2, requestId, false);
  d.set(payload, DATAGRAM_HEADER);
  return d;
}
