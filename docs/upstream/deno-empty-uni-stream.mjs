// Deno-only: a server-opened unidirectional stream that ends before its
// WebTransport prefix ends incomingUnidirectionalStreams for the session.
// deno run --unstable-net --allow-net --allow-read deno-empty-uni-stream.mjs HASH
const [hash] = Deno.args;
const cert = Deno.readTextFileSync("cert.pem"), key = Deno.readTextFileSync("key.pem");
const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
const listener = endpoint.listen({ cert, key, alpnProtocols: ["h3"] });
(async () => {
  const conn = await listener.accept();
  const swt = await Deno.upgradeWebTransport(conn);
  await swt.ready;
  // 1. a raw QUIC uni stream closed with no bytes (FIN before the 0x54 prefix)
  const raw = await conn.createUnidirectionalStream();
  await raw.getWriter().close();
  await new Promise((r) => setTimeout(r, 100));
  // 2. an ordinary WebTransport uni stream
  const s = await swt.createUnidirectionalStream();
  const w = s.getWriter();
  await w.write(new TextEncoder().encode("after the empty stream"));
})();
const value = Uint8Array.from(hash.match(/../g), (h) => parseInt(h, 16));
const wt = new WebTransport(`https://127.0.0.1:${endpoint.addr.port}/`, { serverCertificateHashes: [{ algorithm: "sha-256", value }] });
wt.closed.catch(() => {});
await wt.ready;
const reader = wt.incomingUnidirectionalStreams.getReader();
const t = setTimeout(() => { console.log("timeout: no stream"); Deno.exit(2); }, 3000);
try {
  const { value: stream } = await reader.read();
  const { value: chunk } = await stream.getReader().read();
  console.log("got:", new TextDecoder().decode(chunk));
} catch (e) {
  console.log("incomingUnidirectionalStreams errored:", String(e));
}
clearTimeout(t);
Deno.exit(0);
