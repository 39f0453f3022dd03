// The byte layouts of MCP-Flow 0.1 for the browser peer, from the guide
// (§2) and docs/spec.md §3: control frames (4-byte length), execution stream
// headers (8 bytes), datagram headers (6 bytes), all big-endian. Held to
// testdata/vectors/{frames,streams,datagrams}.json by browser/TestVectors.

export const FRAME_HEADER = 4;
export const STREAM_HEADER = 8;
export const DATAGRAM_HEADER = 6;
export const DEFAULT_MAX_FRAME = 16 * 1024 * 1024;
export const CHANNEL = { RESERVED: 0, PROGRESS: 1, AUDIO: 2, LOG: 3 };
export const CHANNEL_NAME = { 0: 'reserved', 1: 'progress', 2: 'audio', 3: 'log' };

// WireError is a malformed frame, header or datagram. kind is one of
// 'zero length', 'too large', 'truncated' (frames, stream headers,
// datagrams), 'reserved channel', 'unknown channel', 'flags set'.
export class WireError extends Error {
  constructor(kind, detail = {}) { super(`mcp-flow wire: ${kind}`); this.kind = kind; Object.assign(this, detail); }
}

// encodeFrame prefixes a payload of 1 to 2^32-1 bytes with its length.
export function encodeFrame(payload) {
  if (payload.length === 0 || payload.length > 0xffffffff) throw new RangeError('a control frame holds 1 to 2^32-1 bytes');
  const frame = new Uint8Array(FRAME_HEADER + payload.length);
  new DataView(frame.buffer).setUint32(0, payload.length, false);
  frame.set(payload, FRAME_HEADER);
  return frame;
}

// frameLength reads a length prefix and checks it (spec §3.1): 0 is
// 'zero length' (answer -32600, read on); above max is 'too large'
// (answer -32600, close with code 1), judged before any payload is read.
export function frameLength(prefix, max = DEFAULT_MAX_FRAME) {
  const n = new DataView(prefix.buffer, prefix.byteOffset, FRAME_HEADER).getUint32(0, false);
  if (n === 0) throw new WireError('zero length');
  if (n > max) throw new WireError('too large', { length: n, max });
  return n;
}

// readFrames reads a whole control stream (its bytes up to the FIN) as a
// reader does: each frame, then 'clean' at a FIN between frames; a
// zero-length frame is reported and reading goes on; a frame too large or
// cut by the FIN ends it.
export function readFrames(bytes, max = DEFAULT_MAX_FRAME) {
  const out = [];
  let p = 0;
  for (;;) {
    if (p === bytes.length) { out.push({ end: 'clean' }); return out; }
    if (bytes.length - p < FRAME_HEADER) { out.push({ error: new WireError('truncated') }); return out; }
    let n;
    try { n = frameLength(bytes.subarray(p, p + FRAME_HEADER), max); } catch (e) {
      out.push({ error: e });
      if (e.kind !== 'zero length') return out;
      p += FRAME_HEADER;
      continue;
    }
    p += FRAME_HEADER;
    if (bytes.length - p < n) { out.push({ error: new WireError('truncated') }); return out; }
    out.push({ payload: bytes.subarray(p, p + n) });
    p += n;
  }
}

export function encodeStreamHeader({ requestId, streamTag }) {
  const b = new Uint8Array(STREAM_HEADER);
  const dv = new DataView(b.buffer);
  dv.setUint32(0, requestId, false);
  dv.setUint32(4, streamTag, false);
  return b;
}

// parseStreamHeader reads the header at the start of a stream; fewer than 8
// bytes before the FIN is 'truncated' (the stream is refused, 32600).
export function parseStreamHeader(bytes) {
  if (bytes.length < STREAM_HEADER) throw new WireError('truncated');
  const dv = new DataView(bytes.buffer, bytes.byteOffset, STREAM_HEADER);
  return { requestId: dv.getUint32(0, false), streamTag: dv.getUint32(4, false), rest: bytes.subarray(STREAM_HEADER) };
}

export function encodeDatagram({ channel, flags = 0, requestId }, payload = new Uint8Array(0)) {
  const b = new Uint8Array(DATAGRAM_HEADER + payload.length);
  b[0] = channel; b[1] = flags;
  new DataView(b.buffer).setUint32(2, requestId, false);
  b.set(payload, DATAGRAM_HEADER);
  return b;
}

// parseDatagram splits a datagram into header and payload. A datagram
// shorter than its header, on the reserved or an unknown channel, or with
// flags set is a WireError: the receiver drops it (spec §3.3).
export function parseDatagram(bytes) {
  if (bytes.length < DATAGRAM_HEADER) throw new WireError('truncated');
  const channel = bytes[0], flags = bytes[1];
  const requestId = new DataView(bytes.buffer, bytes.byteOffset + 2, 4).getUint32(0, false);
  if (channel === CHANNEL.RESERVED) throw new WireError('reserved channel', { channel });
  if (channel > CHANNEL.LOG) throw new WireError('unknown channel', { channel });
  if (flags !== 0) throw new WireError('flags set', { flags });
  return { channel, channelName: CHANNEL_NAME[channel], flags, requestId, payload: bytes.subarray(DATAGRAM_HEADER) };
}
