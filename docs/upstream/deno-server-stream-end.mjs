// Deno-only: a WebTransport server's send streams cannot be ended properly.
// 1. a stream of Deno.upgradeWebTransport's session: writer.close() sends no FIN
// 2. the same: writer.abort() sends no RESET_STREAM (nor a FIN)
// 3. a Deno.QuicConn stream (the prefix written by hand): writer.close() sends a FIN (works)
// 4. the same: writer.abort() sends a FIN, not a RESET_STREAM: the reader takes a failed stream for a complete one
// deno run --unstable-net --allow-net --allow-read deno-server-stream-end.mjs HASH
const [hash] = Deno.args;
const cert = Deno.readTextFileSync("cert.pem"), key = Deno.readTextFileSync("key.pem");
const enc = new TextEncoder(), dec = new TextDecoder();
const endpoint = new Deno.QuicEndpoint({ hostname: "127.0.0.1", port: 0 });
const listener = endpoint.listen({ cert, key, alpnProtocols: ["h3"] });
(async () => {
  const conn = await listener.accept();
  const swt = await Deno.upgradeWebTransport(conn);
  await swt.ready;
  // 0x54 (a 2-byte varint: 0x40 0x54), then the session id (0: the client's first bidirectional stream)
  const prefix = Uint8Array.from([0x40, 0x54, 0x00]);
  const streams = [
    ["1 api close", () => swt.createUnidirectionalStream(), null, (w) => w.close()],
    ["2 api abort", () => swt.createUnidirectionalStream(), null, (w) => w.abort(new Error("failed"))],
    ["3 quic close", () => conn.createUnidirectionalStream(), prefix, (w) => w.close()],
    ["4 quic abort", () => conn.createUnidirectionalStream(), prefix, (w) => w.abort(new Error("failed"))],
  ];
  for (const [name, open, pre, end] of streams) {
    const w = (await open()).getWriter();
    if (pre) await w.write(pre);
    await w.write(enc.encode(name));
    await end(w);
  }
})();
const value = Uint8Array.from(hash.match(/../g), (h) => parseInt(h, 16));
const wt = new WebTransport(`https://127.0.0.1:${endpoint.addr.port}/`, { serverCertificateHashes: [{ algorithm: "sha-256", value }] });
wt.closed.catch(() => {});
await wt.ready;
const reader = wt.incomingUnidirectionalStreams.getReader();
const ends = [];
for (let i = 0; i < 4; i++) {
  const { value: stream } = await reader.read();
  ends.push((async () => {
    const r = stream.getReader();
    let text = "";
    const timeout = new Promise((res) => setTimeout(() => res("timeout"), 2000));
    try {
      for (;;) {
        const next = await Promise.race([r.read(), timeout]);
        if (next === "timeout") return `${text}: no FIN, no reset within 2 s`;
        if (next.done) return `${text}: FIN`;
        text += dec.decode(next.value);
      }
    } catch (e) {
      return `${text}: reset (${e})`;
    }
  })());
}
for (const line of (await Promise.all(ends)).sort()) console.log(line);
Deno.exit(0);
