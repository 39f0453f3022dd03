// deno-wt-server.mjs is a WebTransport echo server on Deno's unstable
// server API (Deno.QuicEndpoint, Deno.upgradeWebTransport): the probe of
// whether Deno can serve MCP-Flow (js/deno_server_test.go,
// TestDenoWebTransportServer; docs/INTEROP.md, "Deno as a server").
//   deno run --unstable-net --allow-net=127.0.0.1 --allow-read=DIR test/deno-wt-server.mjs CERT.pem KEY.pem
// It prints {"port": N} as its first line on stdout, then one JSON line per
// event: {"event": "session", "url"}, {"event": "prefix", "session"} (at
// /raw), {"event": "bidi", "bytes"} when a client's bidirectional stream
// ends, {"event": "uni", "end"} per stream ended, {"event": "datagram",
// "bytes"} per echoed datagram, {"event": "close"}, {"event": "error",
// "where", "error"}. Each session:
//   - every bidirectional stream the client opens is echoed, byte for byte,
//     and finished when the client finishes it (the control stream's shape);
//   - the server opens a unidirectional stream at once, writes "uni from
//     deno" and finishes it (an execution stream's shape), then opens
//     another, writes "aborted" and aborts it (a failed execution stream,
//     which MCP-Flow resets, spec §5.4);
//   - every datagram is sent back as it came (progress datagrams' path);
//   - a bidirectional stream that starts with "close" closes the session
//     (wt.close with code 0 and the reason "bye", as a server ends a session
//     after $/shutdown, spec §7.2).
// That is the WebTransport API's way (wt.incomingBidirectionalStreams,
// wt.createUnidirectionalStream). A session at the path /raw is served the
// workaround's way instead: on the QUIC connection's own streams
// (conn.incomingBidirectionalStreams, conn.createUnidirectionalStream),
// reading and writing the WebTransport prefixes itself
// (draft-ietf-webtrans-http3 §4.2-4.3: 0x41 or 0x54, then the session id,
// learnt from the client's first bidirectional stream; the uni streams
// are opened then), because Deno 2.9's WebTransport send streams never send a
// FIN (their writer's close() leaves the QUIC stream open) and the QUIC
// ones do. Datagrams go through wt.datagrams either way. It runs until it
// is killed.
const [certFile, keyFile] = Deno.args;
const cert = Deno.readTextFileSync(certFile), key = Deno.readTextFileSync(keyFile);
const enc = new TextEncoder(), dec = new TextDecoder();

function emit(v) {
  // One write of one line: Deno.stdout.writeSync may write less than asked.
  const b = enc.encode(JSON.stringify(v) + '\n');
  for (let off = 0; off < b.length;) off += Deno.stdout.writeSync(b.subarray(off));
}

function fail(where) {
  return (e) => emit({ event: 'error', where, error: String(e) });
}

async function echoBidi(s, wt) {
  let n = 0;
  const w = s.writable.getWriter();
  for await (const chunk of s.readable) {
    if (n === 0 && dec.decode(chunk) === 'close') {
      emit({ event: 'close' });
      wt.close({ closeCode: 0, reason: 'bye' });
      return;
    }
    n += chunk.length;
    await w.write(chunk);
  }
  await w.close();
  emit({ event: 'bidi', bytes: n });
}

// sendUnis sends the two unidirectional streams on streams opened by open,
// each starting with prefix (if any).
async function sendUnis(open, prefix) {
  const w = (await open()).getWriter();
  if (prefix) await w.write(prefix);
  await w.write(enc.encode('uni from deno'));
  await w.close();
  emit({ event: 'uni', end: 'close' });
  const a = (await open()).getWriter();
  if (prefix) await a.write(prefix);
  await a.write(enc.encode('aborted'));
  await a.abort(new Error('the writer failed'));
  emit({ event: 'uni', end: 'abort' });
}

// varint encodes a QUIC variable-length integer (RFC 9000 §16) below 2^30.
function varint(n) {
  if (n < 64) return [n];
  if (n < 16384) return [0x40 | (n >> 8), n & 0xff];
  return [0x80 | (n >>> 24), (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
}

// readVarint reads one QUIC varint from a BYOB reader.
async function readVarint(reader) {
  const first = await readExactly(reader, 1);
  const len = 1 << (first[0] >> 6);
  const rest = len > 1 ? await readExactly(reader, len - 1) : [];
  let n = first[0] & 0x3f;
  for (const b of rest) n = n * 256 + b;
  return n;
}

async function readExactly(reader, n) {
  const out = new Uint8Array(n);
  for (let got = 0; got < n;) {
    const { value, done } = await reader.read(new Uint8Array(n - got));
    if (done) throw new Error('stream ended in its WebTransport prefix');
    out.set(value, got);
    got += value.length;
  }
  return out;
}

// serveRaw serves a session on conn's own streams: each bidirectional
// stream's prefix is read here, and the uni stream's written here.
async function serveRaw(conn, wt) {
  let uniSent = false;
  for await (const s of conn.incomingBidirectionalStreams) {
    (async () => {
      const r = s.readable.getReader({ mode: 'byob' });
      const type = await readVarint(r), sid = await readVarint(r);
      r.releaseLock();
      if (type !== 0x41) throw new Error('bidirectional stream of type ' + type);
      emit({ event: 'prefix', session: sid });
      if (!uniSent) {
        uniSent = true;
        sendUnis(() => conn.createUnidirectionalStream(), Uint8Array.from([...varint(0x54), ...varint(sid)])).catch(fail('uni'));
      }
      await echoBidi(s, wt);
    })().catch(fail('bidi'));
  }
}

async function serveSession(conn) {
  const wt = await Deno.upgradeWebTransport(conn);
  await wt.ready;
  emit({ event: 'session', url: wt.url });
  wt.closed.catch(() => {});
  if (new URL(wt.url).pathname === '/raw') {
    serveRaw(conn, wt).catch(fail('incomingBidirectionalStreams'));
  } else {
    (async () => {
      for await (const s of wt.incomingBidirectionalStreams) echoBidi(s, wt).catch(fail('bidi'));
    })().catch(fail('incomingBidirectionalStreams'));
    sendUnis(() => wt.createUnidirectionalStream()).catch(fail('uni'));
  }
  (async () => {
    const r = wt.datagrams.readable.getReader();
    const w = wt.datagrams.writable.getWriter();
    for (;;) {
      const { value, done } = await r.read();
      if (done) return;
      await w.write(value);
      emit({ event: 'datagram', bytes: value.length });
    }
  })().catch(fail('datagrams'));
}

const endpoint = new Deno.QuicEndpoint({ hostname: '127.0.0.1', port: 0 });
const listener = endpoint.listen({ cert, key, alpnProtocols: ['h3'] });
emit({ port: endpoint.addr.port });
for (;;) {
  const conn = await listener.accept().catch((e) => { fail('accept')(e); return null; });
  if (conn) serveSession(conn).catch(fail('session'));
}
