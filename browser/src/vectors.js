// checkVectors holds the browser peer's codecs (codec.js: the platform's
// JSON, cbor-x, protobufjs) and byte layouts (wire.js) to the
// language-neutral vectors in testdata/vectors (docs/conformance.md, "Test
// vectors"). Messages: the canonical bytes and every accepted form decode to
// the vector's value; the peer's own encoding decodes (with the peer) to the
// same value, and is handed back for the Go decoder to judge (the exact
// bytes are the Go encoder's, not a requirement); every refused payload is
// refused with its code, but for the ones LENIENT names. Frames, stream
// headers and datagram headers: exact, both ways. browser/TestVectors runs it
// under Node.
import { ENCODINGS, LIMITS, CodecError, decodeMessage, decodeValue, detect, encodeMessage, encodeValue } from './codec.js';
import { encodeDatagram, encodeFrame, encodeStreamHeader, parseDatagram, parseStreamHeader, readFrames } from './wire.js';

export function unhex(s) {
  if (s.length % 2 || /[^0-9a-f]/.test(s)) throw new Error('bad hex in a vector');
  const b = new Uint8Array(s.length / 2);
  for (let i = 0; i < b.length; i++) b[i] = parseInt(s.substr(2 * i, 2), 16);
  return b;
}
export function hex(b) { return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(''); }

// zeroSign is v with every -0 made 0.
const zeroSign = (v) => (Object.is(v, -0) ? 0 : Array.isArray(v) ? v.map(zeroSign)
  : v && typeof v === 'object' && v.constructor === Object ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, zeroSign(x)])) : v);

const canonical = (o) => JSON.stringify(Object.fromEntries(Object.entries(o).sort()));
const utf8 = new TextEncoder();

// LENIENT names the refused payloads that a browser peer takes
// (docs/conformance.md, "Test vectors"): the platform's JSON.parse and
// cbor-x take the last of duplicate names and read indefinite lengths and
// ill-formed UTF-8 in CBOR; refusing them would take a second parser of the
// encoding. The peer must take exactly these (a stale list fails).
export const LENIENT = new Set([
  'json/duplicate member',
  'cbor/indefinite-length map', 'cbor/indefinite-length array',
  'cbor/duplicate map key', 'cbor/invalid UTF-8',
]);

// checkVectors takes the parsed files, sha256(bytes) → hex (a promise) and
// equal(a, b), the value equality of the docs (Node's isDeepStrictEqual
// over the value model). It returns what it checked, every failure, how
// many of the peer's encodings are byte for byte the vector's, and the
// peer's encodings for the Go decoder.
export async function checkVectors({ messages, frames, streams, datagrams }, sha256, equal) {
  const failures = [];
  const checked = { messages: 0, forms: 0, generated: 0, refused: 0, frames: 0, streams: 0, datagrams: 0 };
  const exact = { json: [0, 0], cbor: [0, 0], protobuf: [0, 0] };
  const lenient = [], losses = [];
  const peer = [];
  const fail = (where, why) => failures.push(`${where}: ${why}`);
  const attempt = (where, f) => { try { f(); } catch (e) { fail(where, 'threw ' + (e && e.stack || e)); } };
  const attemptAsync = async (where, f) => { try { await f(); } catch (e) { fail(where, 'threw ' + (e && e.stack || e)); } };

  const sameAs = (where, dec, enc, bytes, want) => {
    let got;
    try { got = dec(enc, bytes); } catch (e) { fail(where, `does not decode: ${e.message}`); return; }
    if (!equal(got, want)) fail(where, 'decodes to another value');
  };
  // roundTrip encodes the value with the peer and decodes that with the
  // peer: the same value, but for the one loss of cbor-x (it writes -0 as
  // the integer 0). The bytes go to the Go decoder. canonical is the
  // vector's encoding (or its length and SHA-256); where the vector spells
  // its numbers as the value model writes them (spelled), the peer's bytes
  // must be exactly those: elsewhere the vector's bytes follow the spelling
  // received (1.0 a float, 1 an integer), which a value does not keep.
  const roundTrip = async (where, kind, enc, value, wantJSON, canonical, spelled) => {
    const [encode, dec] = kind === 'value' ? [encodeValue, decodeValue] : [encodeMessage, decodeMessage];
    const b = encode(enc, value);
    let got, json = wantJSON, loss;
    try { got = dec(enc, b); } catch (e) { fail(`${where}/${enc}`, `the peer's encoding does not decode: ${e.message}`); return; }
    if (!equal(got, value)) {
      if (enc === 'cbor' && equal(got, zeroSign(value))) {
        loss = 'cbor-x writes -0 as the integer 0';
        json = hex(encode('json', zeroSign(value)));
        losses.push(`${where}/${enc}: ${loss}`);
      } else fail(`${where}/${enc}`, "the peer's encoding decodes to another value");
    }
    const same = typeof canonical === 'string' ? hex(b) === canonical
      : b.length === canonical.length && (await sha256(b)) === canonical.sha256;
    if (spelled && !same) fail(`${where}/${enc}`, `the peer writes\n${hex(b).slice(0, 400)}\nthe vector says\n${(canonical.sha256 || canonical).slice(0, 400)}`);
    exact[enc][0] += same ? 1 : 0; exact[enc][1]++;
    peer.push({ where, kind, encoding: enc, hex: hex(b), json, loss });
  };

  for (const v of messages.messages) {
    const where = `messages/${v.name}`;
    try {
      const value = decodeMessage('json', unhex(v.json));
      const spelled = hex(encodeMessage('json', value)) === v.json;
      for (const enc of ENCODINGS) {
        sameAs(`${where}/${enc}`, decodeMessage, enc, unhex(v[enc]), value);
        await roundTrip(where, 'message', enc, value, v.json, v[enc], spelled);
      }
      for (const a of v.accept) { sameAs(`${where}/${a.encoding} (${a.form})`, decodeMessage, a.encoding, unhex(a.hex), value); checked.forms++; }
      checked.messages++;
    } catch (e) { fail(where, 'threw ' + (e && e.stack || e)); }
  }

  for (const g of messages.generated) {
    const where = `generated/${g.name}`;
    try {
      const data = new Uint8Array(g.data_length);
      const prefix = unhex(g.data_prefix);
      data.set(prefix);
      let x = g.xorshift32_seed >>> 0;
      for (let i = prefix.length; i < data.length; i++) {
        x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
        data[i] = x & 255;
      }
      let bin = '';
      for (let i = 0; i < data.length; i += 0x8000) bin += String.fromCharCode.apply(null, data.subarray(i, i + 0x8000));
      const json = utf8.encode(g.template.replace('$DATA', btoa(bin)));
      const value = decodeMessage('json', json);
      const spelled = hex(encodeMessage('json', value)) === hex(json);
      for (const enc of ENCODINGS) await roundTrip(where, 'message', enc, value, hex(json), { length: g.length[enc], sha256: g.sha256[enc] }, spelled);
      checked.generated++;
    } catch (e) { fail(where, 'threw ' + (e && e.stack || e)); }
  }

  for (const bp of [...messages.malformed, ...messages.mismatch]) {
    attempt(`refuse/${bp.name}`, () => {
      const b = unhex(bp.hex);
      let code = 0, is = null;
      try { decodeMessage(bp.negotiated, b); } catch (e) {
        if (!(e instanceof CodecError)) throw e;
        code = e.code;
        is = detect(b, bp.negotiated);
        if (is) code = -32003;
      }
      if (LENIENT.has(bp.name)) {
        if (code !== 0) fail(`refuse/${bp.name}`, `refused with ${code}, but LENIENT says the peer takes it: update LENIENT and docs/conformance.md`);
        else lenient.push(bp.name);
      } else if (code !== bp.code) {
        fail(`refuse/${bp.name}`, code === 0 ? `decodes in ${bp.negotiated}; the vector says ${bp.code}` : `refused with ${code}; the vector says ${bp.code}`);
      }
      if (bp.code === -32003 && is !== bp.is) fail(`refuse/${bp.name}`, `the payload is ${is}; the vector says ${bp.is}`);
      checked.refused++;
    });
  }

  // The refusals at depth 65 imply that depth 64 (MaxDepth, spec §8) is
  // taken: a message nested to it goes through the peer in every encoding
  // (protobufjs's own limit of 100 messages would stop at JSON level 33).
  attempt('limits/depth 64', () => {
    let params = { x: 1 };
    for (let i = 3; i < LIMITS.maxDepth; i++) params = { a: params };
    const msg = { jsonrpc: '2.0', method: 'x/deep', params };
    for (const enc of ENCODINGS) sameAs(`limits/depth 64/${enc}`, decodeMessage, enc, encodeMessage(enc, msg), msg);
  });

  for (const v of frames.streams) {
    attempt(`frames/${v.name}`, () => {
      const got = readFrames(unhex(v.hex), v.max_frame_size || frames.default_max_frame_size);
      const n = Math.max(got.length, v.read.length);
      const whole = [];
      for (let i = 0; i < n; i++) {
        const g = got[i], w = v.read[i];
        if (!g || !w) { fail(`frames/${v.name}`, `the reader gets ${got.length} outcomes; the vector lists ${v.read.length}`); break; }
        let desc;
        if (g.payload) { desc = { length: g.payload.length, payload: hex(g.payload) }; whole.push(encodeFrame(g.payload)); }
        else if (g.end) desc = { end: g.end };
        else if (g.error.kind === 'zero length') desc = { error: 'zero length', code: -32600, id: null, session: 'continues' };
        else if (g.error.kind === 'too large') desc = { error: 'too large', length: g.error.length, max: g.error.max, code: -32600, id: null, close_code: 1 };
        else desc = { error: g.error.kind, close_code: 1 };
        const wantDesc = canonical(w), gotDesc = canonical(desc);
        if (gotDesc !== wantDesc) fail(`frames/${v.name}`, `outcome ${i}: the reader gets ${gotDesc}; the vector says ${wantDesc}`);
      }
      if (v.read.every((w) => !w.error)) {
        const written = hex(whole.reduce((a, b) => { const c = new Uint8Array(a.length + b.length); c.set(a); c.set(b, a.length); return c; }, new Uint8Array(0)));
        if (written !== v.hex) fail(`frames/${v.name}`, `encodeFrame writes ${written}; the vector says ${v.hex}`);
      }
      checked.frames++;
    });
  }

  for (const v of streams.headers) {
    attempt(`streams/${v.name}`, () => {
      const b = unhex(v.hex);
      if (v.error) {
        try { parseStreamHeader(b); fail(`streams/${v.name}`, 'parsed; the vector says ' + v.error); } catch (e) {
          if (e.kind !== v.error || v.refuse_code !== 32600) fail(`streams/${v.name}`, `${e.kind}, refused with 32600; the vector says ${v.error}, ${v.refuse_code}`);
        }
      } else {
        const h = parseStreamHeader(b);
        if (h.requestId !== v.request_id || h.streamTag !== v.stream_tag || hex(h.rest) !== v.payload) {
          fail(`streams/${v.name}`, `read request ${h.requestId}, tag ${h.streamTag}, payload ${hex(h.rest)}`);
        }
        const w = hex(encodeStreamHeader({ requestId: v.request_id, streamTag: v.stream_tag })) + v.payload;
        if (w !== v.hex) fail(`streams/${v.name}`, `encodeStreamHeader writes ${w}; the vector says ${v.hex}`);
        if (v.when && (v.code !== -32002 || v.refuse_code !== 32002)) fail(`streams/${v.name}`, `an injected stream is refused with 32002 and reported -32002; the vector says ${v.refuse_code}, ${v.code}`);
      }
      checked.streams++;
    });
  }

  for (const v of datagrams.datagrams) {
    await attemptAsync(`datagrams/${v.name}`, async () => {
      const b = unhex(v.hex);
      if (v.when) {
        if (v.code !== -32004) fail(`datagrams/${v.name}`, `a datagram where datagrams are off is answered -32004; the vector says ${v.code}`);
      } else if (v.error) {
        try { parseDatagram(b); fail(`datagrams/${v.name}`, 'parsed; the vector says ' + v.error); } catch (e) {
          if (e.kind !== v.error || v.action !== 'drop') fail(`datagrams/${v.name}`, `${e.kind}; the vector says ${v.error}, ${v.action}`);
        }
      } else {
        const d = parseDatagram(b);
        if (d.channel !== v.channel || d.channelName !== v.channel_name || d.flags !== v.flags || d.requestId !== v.request_id || hex(d.payload) !== v.payload) {
          fail(`datagrams/${v.name}`, `read ${JSON.stringify({ ...d, payload: hex(d.payload) })}`);
        }
        const w = hex(encodeDatagram({ channel: v.channel, flags: v.flags, requestId: v.request_id }, unhex(v.payload)));
        if (w !== v.hex) fail(`datagrams/${v.name}`, `encodeDatagram writes ${w}; the vector says ${v.hex}`);
        if (v.payload_encoding) {
          const json = hex(utf8.encode(v.value));
          const value = decodeValue('json', unhex(json));
          sameAs(`datagrams/${v.name}/payload`, decodeValue, v.payload_encoding, d.payload, value);
          await roundTrip(`datagrams/${v.name}`, 'value', v.payload_encoding, value, json, v.payload, hex(encodeValue('json', value)) === json);
        }
      }
      checked.datagrams++;
    });
  }
  return { checked, failures, exact, lenient, losses, peer };
}
