// The browser's throughput against its own limit (bench/browser_test.go,
// BenchmarkBrowserThroughput): the same n bytes, in interleaved rounds,
// (a) on a bare WebTransport stream of a webtransport-go server, read with
// the engine's own stream reader, and (b) as the result of tools/call
// generate through the official SDK v2 client over the package's
// WebTransportClientTransport with its defaults (what a page gets: encodings
// cbor then json, so CBOR on the control stream; the bytes themselves come
// raw on an execution stream, docs/spec.md §5, read with transport.stream()).
// Each read is timed in the page (performance.now()); the findings go to
// window.__result.
//   ?url=MCP_FLOW_URL&bare=BARE_URL&hash=HEX&size=N&rounds=R
import { Client } from '@modelcontextprotocol/client';
import { WebTransportClientTransport } from '../dist/index.js';

const q = new URLSearchParams(location.search);
const size = Number(q.get('size'));
const rounds = Number(q.get('rounds'));
const hash = q.get('hash');

function hexToBytes(s) {
  const b = new Uint8Array(s.length / 2);
  for (let i = 0; i < b.length; i++) b[i] = parseInt(s.substr(2 * i, 2), 16);
  return b;
}

// drain reads a ReadableStream of bytes to its end, keeping none of them,
// and returns how many there were and how many chunks brought them.
async function drain(readable) {
  const r = readable.getReader();
  let bytes = 0; let chunks = 0;
  for (;;) {
    const { value, done } = await r.read();
    if (done) return { bytes, chunks };
    bytes += value.byteLength; chunks++;
  }
}

// The bare stream: on a bidirectional stream the page asks for n bytes (8
// bytes, big-endian); the server sends them on a unidirectional stream of
// its own, as MCP-Flow sends an execution stream.
async function bareSession() {
  const wt = new WebTransport(q.get('bare'), { serverCertificateHashes: [{ algorithm: 'sha-256', value: hexToBytes(hash) }] });
  await wt.ready;
  const incoming = wt.incomingUnidirectionalStreams.getReader();
  const read = async (n) => {
    const t0 = performance.now();
    const bidi = await wt.createBidirectionalStream();
    const req = new Uint8Array(8);
    new DataView(req.buffer).setBigUint64(0, BigInt(n));
    const w = bidi.writable.getWriter();
    await w.write(req);
    await w.close();
    const { value } = await incoming.read();
    const firstMs = performance.now() - t0; // the server's stream, before its first byte is read
    const got = await drain(value);
    return { ms: performance.now() - t0, firstMs, ...got };
  };
  return { read, close: () => wt.close() };
}

// The SDK: a v2 Client over the transport with its defaults.
async function sdkSession() {
  const transport = new WebTransportClientTransport(q.get('url'), { serverCertificateHashes: hash });
  const client = new Client({ name: 'mcp-flow-throughput', version: '0.1.0' }, { capabilities: {} });
  await client.connect(transport);
  const read = async (n) => {
    const t0 = performance.now();
    const res = await client.callTool({ name: 'generate', arguments: { bytes: n } });
    const callMs = performance.now() - t0; // the result, once inlineLimit bytes are read ahead
    const link = res.content.find((c) => c.type === 'resource_link');
    if (!link) throw new Error('generate gave no resource_link: ' + JSON.stringify(res).slice(0, 300));
    const got = await drain(await transport.stream(link.uri));
    return { ms: performance.now() - t0, callMs, ...got };
  };
  return { read, close: () => client.close(), transport };
}

async function main() {
  const bare = await bareSession();
  const sdk = await sdkSession();
  const out = { encoding: sdk.transport.encoding, serverTransport: sdk.transport.serverTransport, bare: [], sdk: [] };
  // A warm-up of each, not counted: the first read of a session pays for
  // its congestion window and the engine's first compilations.
  await bare.read(size);
  await sdk.read(size);
  for (let i = 0; i < rounds; i++) {
    // Which goes first alternates, so that neither always follows the other.
    if (i % 2 === 0) {
      out.bare.push(await bare.read(size));
      out.sdk.push(await sdk.read(size));
    } else {
      out.sdk.push(await sdk.read(size));
      out.bare.push(await bare.read(size));
    }
  }
  await sdk.close();
  bare.close();
  return out;
}

main().then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e && e.stack || e) }; });
