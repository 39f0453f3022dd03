// deno-sdk.js: the page of TestDenoSDKServer/chromium (js/deno_sdk_test.go):
// the TypeScript SDK v2 client (@modelcontextprotocol/client), in the
// browser, over this package's WebTransportClientTransport, calls the tools
// of a TypeScript SDK v2 server that Deno serves over MCP-Flow
// (test/deno-sdk-server.mjs, js/src/server.js), and leaves what it saw in
// window.__result. Query: url, hash (the server certificate's SHA-256).
import { Client } from '@modelcontextprotocol/client';
import { WebTransportClientTransport } from '../src/index.js';

const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const sha256 = async (b) => hex(new Uint8Array(await crypto.subtle.digest('SHA-256', b)));
const q = new URLSearchParams(location.search);

async function run() {
  const r = {};
  const transport = new WebTransportClientTransport(q.get('url'), { serverCertificateHashes: q.get('hash') });
  const client = new Client({ name: 'deno-sdk-page', version: '1.0.0' });
  await client.connect(transport);
  r.encoding = transport.encoding;
  r.server = client.getServerVersion();
  r.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  r.echo = (await client.callTool({ name: 'echo', arguments: { text: 'hello from chromium' } })).content[0].text;
  // 1 MiB: over the server's 256 KiB threshold, so it comes on an
  // execution stream, which the client transport inlines (under 8 MiB).
  const blob = (await client.callTool({ name: 'generate_blob', arguments: { bytes: 1 << 20 } })).content[0];
  const bytes = Uint8Array.fromBase64 ? Uint8Array.fromBase64(blob.resource.blob) : Uint8Array.from(atob(blob.resource.blob), (c) => c.charCodeAt(0));
  r.blob = { type: blob.type, uri: blob.resource.uri, bytes: bytes.length, sha256: await sha256(bytes) };
  // 16 MiB on the openStream path: past the inline limit, a resource_link
  // read with transport.stream().
  const link = (await client.callTool({ name: 'generate', arguments: { bytes: 16 << 20 } })).content[0];
  const chunks = [];
  let n = 0;
  for await (const c of await transport.stream(link.uri)) { chunks.push(c); n += c.length; }
  const all = new Uint8Array(n);
  n = 0;
  for (const c of chunks) { all.set(c, n); n += c.length; }
  r.stream = { type: link.type, bytes: all.length, sha256: await sha256(all) };
  const progress = [];
  const p = await client.callTool({ name: 'progress', arguments: { steps: 5, delayMs: 20 } }, { onprogress: (u) => progress.push(u.progress) });
  r.progress = { result: p.content[0].text, values: progress, datagrams: transport.stats.datagramsReceived };
  await client.close();
  r.closed = true;
  return r;
}

run().then((r) => { window.__result = r; }, (e) => { window.__result = { error: `${e && e.name}: ${e && e.message}` }; });
