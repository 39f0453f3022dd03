// The message encodings of MCP-Flow 0.1 (json, cbor, protobuf) for the
// browser peer, by libraries: the platform's JSON.parse/JSON.stringify,
// cbor-x, and protobufjs over the project's codec/pb/value.proto. What is
// written here is what those libraries leave to their user and the protocol
// decides (docs/spec.md §4.4): exact numbers (num), the `data`/`blob` base64
// members as bytes, the Value tree of value.proto, the limits of spec §8 and
// the refusals the libraries do not make. Held to testdata/vectors by
// browser/TestVectors.
//
// A decoded value is plain JavaScript: objects, arrays, strings, booleans,
// null, and for numbers a number when its shortest float64 form has exactly
// its decimal value, a BigInt for a larger integer, else a Decimal.
import { Decoder, Encoder, Tag, addExtension } from 'cbor-x';
import protobuf from 'protobufjs';

export const ENCODINGS = ['json', 'cbor', 'protobuf'];
export const LIMITS = { maxDepth: 64, maxBatch: 1024, maxNumberDigits: 256 };

// CodecError is a payload that does not decode: answered -32700 (spec §4.3).
export class CodecError extends Error {
  constructor(encoding, reason) { super(`${encoding}: ${reason}`); this.encoding = encoding; this.code = -32700; }
}

// Decimal is a number that neither a float64 nor a BigInt holds exactly:
// digits × 10^exp, written as JSON number text.
export class Decimal {
  constructor(text) { this.text = text; }
  toString() { return this.text; }
}

// decimal splits JSON number text into sign, significant digits (no
// leading or trailing zeros, '' for zero) and a power of ten; null if it is
// not JSON number text.
function decimal(s) {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([-+]?\d+))?$/.exec(s);
  if (!m) return null;
  const frac = m[3] || '', all = (m[2] + frac).replace(/^0+/, ''), digits = all.replace(/0+$/, '');
  return { sign: m[1], digits, exp: BigInt(m[4] || 0) - BigInt(frac.length) + BigInt(all.length - digits.length) };
}

// num maps JSON number text to the value model (spec §4.4: numbers are
// equal by exact decimal value and sign): a number when the shortest form
// of the nearest float64 has exactly that value, else a BigInt for an
// integer, else a Decimal.
export function num(s) {
  const d = decimal(s);
  if (!d) throw new Error(`not a JSON number: ${s.slice(0, 40)}`);
  if (d.digits.length > LIMITS.maxNumberDigits) throw new Error('number with too many digits (limit MaxNumberDigits)');
  if (d.digits === '') return d.sign ? -0 : 0;
  const f = Number(s), g = decimal(String(f));
  if (g && g.digits === d.digits && g.exp === d.exp) return f;
  if (d.exp >= 0n && d.exp <= 1024n) return BigInt(d.sign + d.digits + '0'.repeat(Number(d.exp)));
  return new Decimal(`${d.sign}${d.digits}e${d.exp}`);
}

// numberText writes a number of the value model as JSON number text.
const numberText = (v) => (Object.is(v, -0) ? '-0' : String(v));

const isNumber = (v) => typeof v === 'number' || typeof v === 'bigint' || v instanceof Decimal;
const isBinaryKey = (k) => k === 'data' || k === 'blob';

// Base64 by the platform (atob/btoa); canonical: standard, padded, and what
// btoa writes back.
function fromBase64(s) {
  let bin;
  try { bin = atob(s); } catch { return null; }
  if (btoa(bin) !== s) return null;
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}
function toBase64(b) {
  let bin = '';
  for (let i = 0; i < b.length; i += 0x8000) bin += String.fromCharCode.apply(null, b.subarray(i, i + 0x8000));
  return btoa(bin);
}

// setMember adds a member to a decoded object, refusing a duplicate name
// (spec §4.4) and never touching the prototype ("__proto__").
function setMember(o, k, v, fail) {
  if (Object.prototype.hasOwnProperty.call(o, k)) fail(`duplicate member name ${JSON.stringify(k)}`);
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

// guard runs a decoder: whatever it or its library throws is a CodecError.
function guard(encoding, f) {
  try { return f(); } catch (e) { throw e instanceof CodecError ? e : new CodecError(encoding, e.message); }
}

// deep refuses a container past MaxDepth (spec §8; the message is level 1).
function deep(depth, fail) { if (depth > LIMITS.maxDepth) fail(`nesting deeper than ${LIMITS.maxDepth} (limit MaxDepth)`); }

// ---- JSON (RFC 8259): JSON.parse with the source text of each number ----

const strictUTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const utf8 = new TextEncoder();

function jsonDecode(b) {
  const fail = (why) => { throw new CodecError('json', why); };
  let s;
  try { s = strictUTF8.decode(b); } catch { fail('text is not valid UTF-8'); }
  let v;
  try {
    v = JSON.parse(s, function (k, x, ctx) {
      if (!k.isWellFormed()) throw new Error('a member name holds a lone surrogate');
      if (typeof x === 'number') return num(ctx.source);
      if (typeof x === 'string' && !x.isWellFormed()) throw new Error('a string holds a lone surrogate');
      return x;
    });
  } catch (e) { fail(e.message); }
  const walk = (x, depth) => {
    if (x === null || typeof x !== 'object' || isNumber(x)) return;
    deep(depth, fail);
    for (const y of Object.values(x)) walk(y, depth + 1);
  };
  walk(v, Array.isArray(v) ? 0 : 1);
  return v;
}

function jsonEncode(v) {
  return utf8.encode(JSON.stringify(v, (k, x) => {
    if (typeof x === 'bigint' || x instanceof Decimal || Object.is(x, -0)) return JSON.rawJSON(numberText(x));
    return x;
  }));
}

// ---- CBOR (RFC 8949) by cbor-x ----

// Tag 4, a decimal fraction [exponent, mantissa], is a Decimal (cbor-x's own
// tag 4 decoder gives a lossy float).
addExtension({
  Class: Decimal, tag: 4,
  encode(d, enc) {
    const [, mant, exp] = /^(-?\d+)e(-?\d+)$/.exec(d.text);
    const m = BigInt(mant);
    enc([Number(exp), m >= BigInt(Number.MIN_SAFE_INTEGER) && m <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(m) : m]);
  },
  decode(a) {
    const isInt = (x) => typeof x === 'bigint' || Number.isInteger(x);
    if (!Array.isArray(a) || a.length !== 2 || !isInt(a[0]) || !isInt(a[1])) throw new Error('decimal fraction is not [exponent, mantissa]');
    return num(`${a[1]}e${a[0]}`);
  },
});

const cborDecoder = new Decoder({ mapsAsObjects: false, useRecords: false });
const cborEncoder = new Encoder({ useRecords: false, mapsAsObjects: true, tagUint8Array: false, variableMapSize: true });

// fromCBOR turns what cbor-x decoded into the value model, refusing what
// has no JSON form (spec §4.4).
function fromCBOR(x, depth, fail) {
  if (x === null || typeof x === 'boolean' || typeof x === 'string' || x instanceof Decimal) return x;
  if (typeof x === 'number') {
    if (!Number.isFinite(x)) fail('NaN and infinities have no JSON form');
    return x;
  }
  if (typeof x === 'bigint') return num(String(x));
  if (x instanceof Uint8Array) return toBase64(x);
  if (x instanceof Tag) {
    if ([21, 22, 23].includes(x.tag) && !(x.value instanceof Uint8Array)) return fromCBOR(x.value, depth, fail);
    if (x.tag === 22) return toBase64(x.value);
    if (x.tag === 21) return toBase64(x.value).replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_');
    if (x.tag === 23) return Array.from(x.value, (c) => c.toString(16).padStart(2, '0')).join('');
    fail(`tag ${x.tag} is not supported`);
  }
  if (Array.isArray(x)) { deep(depth, fail); return x.map((y) => fromCBOR(y, depth + 1, fail)); }
  if (x instanceof Map) {
    deep(depth, fail);
    const o = {};
    for (const [k, y] of x) {
      if (typeof k !== 'string') fail('map key is not a text string');
      setMember(o, k, fromCBOR(y, depth + 1, fail), fail);
    }
    return o;
  }
  fail(x === undefined ? 'undefined has no JSON form' : `${Object.prototype.toString.call(x)} has no JSON form`);
}

// toCBOR marks what cbor-x cannot tell from the value: canonical base64 in
// a data or blob member travels as tag 22 bytes.
function toCBOR(v, key) {
  if (typeof v === 'string') { const b = isBinaryKey(key) && fromBase64(v); return b ? new Tag(b, 22) : v; }
  if (v === null || typeof v !== 'object' || v instanceof Decimal) return v;
  if (Array.isArray(v)) return v.map((x) => toCBOR(x));
  const o = {};
  for (const [k, x] of Object.entries(v)) o[k] = toCBOR(x, k);
  return o;
}

function cborDecode(b, batchOK) {
  const fail = (why) => { throw new CodecError('cbor', why); };
  return guard('cbor', () => {
    const x = cborDecoder.decode(b);
    return fromCBOR(x, batchOK && Array.isArray(x) ? 0 : 1, fail);
  });
}

// ---- protobuf by protobufjs over codec/pb/value.proto ----

let PB = null;

// loadProto parses codec/pb/value.proto (its text), which the protobuf
// encoding needs; the page's client negotiates cbor or json and skips it.
export function loadProto(text) {
  const root = protobuf.parse(text, { keepCase: true }).root;
  PB = { Value: root.lookupType('mcpflow.v1.Value'), Payload: root.lookupType('mcpflow.v1.Payload') };
  // Each JSON level is three messages deep (Value, Object, Member):
  // protobufjs's limit of 100 would refuse a valid message past level 33;
  // MaxDepth (spec §8) is judged by deep().
  protobuf.util.recursionLimit = protobuf.Reader.recursionLimit = 3 * LIMITS.maxDepth + 8;
  // protobufjs reads strings leniently; proto3 strings must be UTF-8.
  const strict = function () { return strictUTF8.decode(this.bytes()); };
  protobuf.Reader.prototype.string = strict;
  if (protobuf.BufferReader) protobuf.BufferReader.prototype.string = strict;
}

const I64 = [-(2n ** 63n), 2n ** 63n - 1n];

// toPB maps a value to a Value (value.proto).
function toPB(v, key) {
  if (v === null) return { null: true };
  if (typeof v === 'boolean') return { bool: v };
  if (typeof v === 'string') { const b = isBinaryKey(key) && fromBase64(v); return b ? { bytes: b } : { string: v }; }
  if (typeof v === 'number') return Number.isSafeInteger(v) && !Object.is(v, -0) ? { int: v } : { double: v };
  if (typeof v === 'bigint') {
    if (v >= I64[0] && v <= I64[1]) return { int: String(v) };
    return v > 0n && v < 2n ** 64n ? { uint: String(v) } : { number: String(v) };
  }
  if (v instanceof Decimal) return { number: v.text };
  if (Array.isArray(v)) return { array: { items: v.map((x) => toPB(x)) } };
  return { object: { members: Object.entries(v).map(([k, x]) => ({ key: k, value: toPB(x, k) })) } };
}

// fromPB maps a decoded Value (toObject with oneofs, longs as strings) back.
function fromPB(p, depth, fail) {
  switch (p && p.kind) {
    case 'null': return null;
    case 'bool': return p.bool;
    case 'int': return num(p.int);
    case 'uint': return num(p.uint);
    case 'double': if (!Number.isFinite(p.double)) fail('NaN and infinities have no JSON form'); return p.double;
    case 'string': return p.string;
    case 'bytes': return toBase64(p.bytes);
    case 'number': return num(p.number);
    case 'array': deep(depth, fail); return (p.array.items || []).map((x) => fromPB(x, depth + 1, fail));
    case 'object': {
      deep(depth, fail);
      const o = {};
      for (const m of p.object.members || []) setMember(o, m.key, fromPB(m.value, depth + 1, fail), fail);
      return o;
    }
  }
  return null; // an empty Value, as value.proto's null (the Go decoder's reading)
}

const ENVELOPE = ['jsonrpc', 'id', 'method', 'params', 'result', 'error'];
const pbMessage = (m) => {
  const out = {};
  for (const k of ENVELOPE) {
    if (m[k] === undefined) continue;
    out[k] = k === 'jsonrpc' || k === 'method' ? m[k] : toPB(m[k]);
  }
  return out;
};
const pbOpts = { longs: String, oneofs: true };

function pbDecodeMessage(m, fail) {
  const out = {};
  for (const k of ENVELOPE) {
    if (m[k] === undefined || m[k] === null) continue;
    out[k] = k === 'jsonrpc' || k === 'method' ? m[k] : fromPB(m[k], 2, fail);
  }
  return out;
}

function pbDecode(b) {
  const fail = (why) => { throw new CodecError('protobuf', why); };
  if (!PB) fail('value.proto is not loaded (loadProto)');
  const p = guard('protobuf', () => PB.Payload.toObject(PB.Payload.decode(b), pbOpts));
  return guard('protobuf', () => {
    if (p.body === 'message') return pbDecodeMessage(p.message, fail);
    if (p.body !== 'batch') fail('payload holds neither a message nor a batch');
    const msgs = p.batch.messages || [];
    if (msgs.length > LIMITS.maxBatch) fail('batch too large (limit MaxBatch)');
    return msgs.map((m) => pbDecodeMessage(m, fail));
  });
}

// ---- the codec API of the peer ----

// encodeMessage writes a message, or a batch (an array), as a control
// frame's payload.
export function encodeMessage(encoding, msg) {
  if (encoding === 'json') return jsonEncode(msg);
  if (encoding === 'cbor') return cborEncoder.encode(toCBOR(msg));
  if (!PB) throw new Error('value.proto is not loaded (loadProto)');
  const body = Array.isArray(msg) ? { batch: { messages: msg.map(pbMessage) } } : { message: pbMessage(msg) };
  return PB.Payload.encode(body).finish();
}

// decodeMessage decodes a control frame's payload: a message or a batch. It
// throws a CodecError (-32700).
export function decodeMessage(encoding, b) {
  let v;
  if (encoding === 'json') v = jsonDecode(b);
  else if (encoding === 'cbor') v = cborDecode(b, true);
  else return pbDecode(b);
  if (Array.isArray(v) && v.length > LIMITS.maxBatch) throw new CodecError(encoding, 'batch too large (limit MaxBatch)');
  return v;
}

// encodeValue and decodeValue carry one JSON value (a datagram payload).
export function encodeValue(encoding, v) {
  if (encoding === 'json') return jsonEncode(v);
  if (encoding === 'cbor') return cborEncoder.encode(toCBOR(v));
  return PB.Value.encode(toPB(v)).finish();
}

export function decodeValue(encoding, b) {
  if (encoding === 'json') return jsonDecode(b);
  if (encoding === 'cbor') return cborDecode(b, false);
  const fail = (why) => { throw new CodecError('protobuf', why); };
  return guard('protobuf', () => fromPB(PB.Value.toObject(PB.Value.decode(b), pbOpts), 1, fail));
}

// detect names the encoding, other than the negotiated one, in which b is a
// JSON-RPC payload (spec §4.3: -32003 rather than -32700), or null.
export function detect(b, negotiated) {
  for (const enc of ENCODINGS) {
    if (enc === negotiated || (enc === 'protobuf' && !PB)) continue;
    let v;
    try { v = decodeMessage(enc, b); } catch { continue; }
    if ((Array.isArray(v) ? v : [v]).some((m) => m && m.jsonrpc === '2.0')) return enc;
  }
  return null;
}
