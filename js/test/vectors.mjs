// vectors.mjs holds js/src/wire.js (the wire code of both transports of
// this package) to the language-neutral test vectors of testdata/vectors
// (docs/conformance.md, "Test vectors"), where they apply to it:
//   deno run --allow-read=.. --allow-env test/vectors.mjs   (or: node test/vectors.mjs)
// It prints one JSON line: {checked: {what: n}, notApplicable: {what: n},
// accepted: [names of malformed payloads the decoder took], failures: [...]}
// (js/deno_sdk_test.go, TestDenoSDKServer/vectors, asserts no failures).
//   - frames.json: every stream of whole frames is frameOf(payload)... exactly;
//   - streams.json: every valid header is streamHeader(request, tag) exactly;
//   - datagrams.json: every valid datagram is datagramOf(channel, request,
//     payload) exactly, and its payload decodes to its value;
//   - messages.json: each message's CBOR and JSON decode to one value, as do
//     its other accepted forms in json and cbor (protobuf is not spoken
//     here), and a re-encoding in cbor decodes to it again; a message with
//     an integer past 2^53 is not applicable (a JS number cannot hold it);
//     malformed and mismatched payloads must not decode to a message in
//     their negotiated encoding, except those listed in accepted: cbor-x
//     and JSON.parse are laxer than the Go codec (duplicate members,
//     depth), which the server answers as valid messages.
import { datagramOf, decodePayload, decodeRaw, encodePayload, frameOf, streamHeader } from '../src/wire.js';

const dir = new URL('../../testdata/vectors/', import.meta.url);
const read = async (f) => JSON.parse(typeof Deno !== 'undefined'
  ? await Deno.readTextFile(new URL(f, dir))
  : (await import('node:fs')).readFileSync(new URL(f, dir), 'utf8'));
const hex = (h) => Uint8Array.from((h || '').match(/../g) || [], (x) => parseInt(x, 16));
const toHex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const cat = (parts) => { const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0)); let o = 0; for (const p of parts) { out.set(p, o); o += p.length; } return out; };

const out = { checked: {}, notApplicable: {}, accepted: [], failures: [] };
const count = (k, what = 'checked') => { out[what][k] = (out[what][k] || 0) + 1; };
const fail = (k, name, why) => out.failures.push(`${k}: ${name}: ${why}`);

// equal compares JSON values as the vectors say: objects by members (order
// aside), numbers by value and sign.
function equal(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return a === b && Object.is(a, 0) === Object.is(b, 0);
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (a && typeof a === 'object') {
    if (!b || typeof b !== 'object' || Array.isArray(b)) return false;
    const ka = Object.keys(a), kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
  }
  return a === b;
}
const hasBig = (v) => typeof v === 'bigint' || (v && typeof v === 'object' && Object.values(v).some(hasBig))
  || (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v));

const frames = await read('frames.json');
for (const s of frames.streams) {
  if (!s.read.every((r) => r.payload !== undefined || r.end)) { count('frames', 'notApplicable'); continue; }
  const got = toHex(cat(s.read.filter((r) => r.payload !== undefined).map((r) => frameOf(hex(r.payload)))));
  if (got !== s.hex) fail('frames', s.name, `${got}, want ${s.hex}`); else count('frames');
}

const streams = await read('streams.json');
for (const h of streams.headers) {
  if (h.error) { count('stream headers', 'notApplicable'); continue; }
  const got = toHex(cat([streamHeader(h.request_id, h.stream_tag), hex(h.payload)]));
  if (got !== h.hex) fail('stream headers', h.name, `${got}, want ${h.hex}`); else count('stream headers');
}

const datagrams = await read('datagrams.json');
for (const d of datagrams.datagrams) {
  if (d.error || d.action || d.flags !== 0 || ![1, 2, 3].includes(d.channel) || !['json', 'cbor'].includes(d.payload_encoding)) { count('datagrams', 'notApplicable'); continue; }
  const got = toHex(datagramOf(d.channel, d.request_id, hex(d.payload)));
  if (got !== d.hex) { fail('datagrams', d.name, `${got}, want ${d.hex}`); continue; }
  if (d.value !== undefined && !equal(decodePayload(hex(d.payload), d.payload_encoding), JSON.parse(d.value))) {
    fail('datagrams', d.name, 'the payload does not decode to its value');
    continue;
  }
  count('datagrams');
}

const messages = await read('messages.json');
for (const m of messages.messages) {
  const fromJSON = decodePayload(hex(m.json), 'json');
  if (hasBig(decodeRaw(hex(m.cbor), 'cbor')) || hasBig(fromJSON)) { count('messages', 'notApplicable'); continue; }
  const fromCBOR = decodePayload(hex(m.cbor), 'cbor');
  if (!equal(fromCBOR, fromJSON)) { fail('messages', m.name, `cbor ${JSON.stringify(fromCBOR)} != json ${JSON.stringify(fromJSON)}`); continue; }
  if (!equal(decodePayload(encodePayload(fromJSON, 'cbor'), 'cbor'), fromJSON)) { fail('messages', m.name, 'a cbor round trip changed it'); continue; }
  count('messages');
  for (const a of m.accept || []) {
    if (a.encoding !== 'json' && a.encoding !== 'cbor') { count('accepted forms', 'notApplicable'); continue; }
    let v;
    try { v = decodePayload(hex(a.hex), a.encoding); } catch (e) { fail('accepted forms', `${m.name} (${a.form})`, `refused: ${e.message}`); continue; }
    if (hasBig(v)) { count('accepted forms', 'notApplicable'); continue; }
    if (!equal(v, fromJSON)) fail('accepted forms', `${m.name} (${a.form})`, 'decodes to another value'); else count('accepted forms');
  }
}
for (const m of [...messages.malformed, ...messages.mismatch]) {
  if (m.negotiated !== 'json' && m.negotiated !== 'cbor') { count('malformed', 'notApplicable'); continue; }
  let v;
  try { v = decodePayload(hex(m.hex), m.negotiated); } catch { count('malformed'); continue; }
  if (v === null || typeof v !== 'object') { count('malformed'); continue; } // not a message: -32600 or -32700
  out.accepted.push(m.name);
}

console.log(JSON.stringify(out));
