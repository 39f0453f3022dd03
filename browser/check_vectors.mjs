// check_vectors.mjs runs the browser peer's codecs and byte layouts
// (src/codec.js, src/wire.js) over the test vectors under Node and prints
// what it checked, every failure and the peer's exactness as one JSON line
// on stdout; with PEER_OUT it writes the peer's own encodings there as JSON
// for the Go decoder (browser/TestVectors).
//   node check_vectors.mjs VECTORS_DIR [PEER_OUT]
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

// The code a browser runs: JSON.parse's source text and JSON.rawJSON (exact
// numbers) are in every current browser, in Node before 22 behind a V8 flag;
// cbor-x's pure JavaScript decoder, not the native cbor-extract it takes
// under Node (which misreads 8-byte length heads).
if (typeof JSON.rawJSON !== 'function' || process.env.CBOR_NATIVE_ACCELERATION_DISABLED !== 'true') {
  const flags = typeof JSON.rawJSON === 'function' ? [] : ['--harmony-json-parse-with-source'];
  const env = { ...process.env, CBOR_NATIVE_ACCELERATION_DISABLED: 'true' };
  const r = spawnSync(process.execPath, [...flags, ...process.argv.slice(1)], { stdio: 'inherit', env });
  process.exit(r.status ?? 1);
}
const { loadProto } = await import('./src/codec.js');
const { checkVectors } = await import('./src/vectors.js');

const [dir = '../testdata/vectors', peerOut] = process.argv.slice(2);
const load = (name) => JSON.parse(readFileSync(join(dir, name), 'utf8'));
const files = {
  messages: load('messages.json'), frames: load('frames.json'),
  streams: load('streams.json'), datagrams: load('datagrams.json'),
};
loadProto(readFileSync(new URL('../codec/pb/value.proto', import.meta.url), 'utf8'));
const sha256 = async (b) => createHash('sha256').update(b).digest('hex');
const { peer, ...result } = await checkVectors(files, sha256, isDeepStrictEqual);
if (peerOut) writeFileSync(peerOut, JSON.stringify(peer));
process.stdout.write(JSON.stringify(result) + '\n');
