// deno-server-probe.js probes a WebTransport echo server
// (test/deno-wt-server.mjs, Deno's server API) from a page, for
// TestDenoWebTransportServer (js/deno_server_test.go): the page's query has
// url and hash (the certificate's SHA-256, hex). It leaves in
// window.__result what each step saw, the same fields as the test's Go
// probe: session ("ok" or the error), bidi (the echo of "hello deno"),
// bidiFin ("fin" when the server finished the stream after the page
// finished its side), uni and uniFin (a stream the server opened), aborted
// and abortedEnd (a second one, which the server aborts), datagram (the
// echo of a datagram), close (how `closed` settled once the server closed
// the session: "closed: CODE REASON", or the error). Each wait is bounded by `wait` ms (a hang guard:
// a step that never ends is a result, not a hang); the steps go on after a
// failed one where they can.
const q = new URLSearchParams(location.search);
const wait = Number(q.get('wait') || 5000);
const out = {};
const enc = new TextEncoder(), dec = new TextDecoder();

function bounded(p, what) {
  let timer;
  const guard = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('timeout: ' + what)), wait); });
  return Promise.race([p, guard]).finally(() => clearTimeout(timer));
}

// readN reads n bytes from reader; readEnd reads to the end and returns the
// text with how it ended: "fin", or the error that stopped it.
async function readN(reader, n) {
  let got = new Uint8Array(0);
  while (got.length < n) {
    const { value, done } = await bounded(reader.read(), 'reading ' + n + ' bytes (got ' + got.length + ')');
    if (done) throw new Error('stream ended after ' + got.length + ' bytes');
    const b = new Uint8Array(got.length + value.length);
    b.set(got); b.set(value, got.length); got = b;
  }
  return dec.decode(got);
}

async function readEnd(reader, what) {
  let text = '';
  try {
    for (;;) {
      const { value, done } = await bounded(reader.read(), what);
      if (done) return { text, end: 'fin' };
      text += dec.decode(value, { stream: true });
    }
  } catch (e) {
    return { text, end: err(e) };
  }
}

const err = (e) => 'error: ' + (e && e.name && e.name !== 'Error' ? e.name + ': ' : '') + (e && e.message || String(e));

// readUnis reads two streams from unis, each to its end, at once.
async function readUnis(unis) {
  const ends = [];
  for (let i = 0; i < 2; i++) {
    try {
      const { value: s, done } = await bounded(unis.read(), 'a server-opened unidirectional stream');
      if (done) throw new Error('incomingUnidirectionalStreams ended');
      ends.push(readEnd(s.getReader(), 'the end of a server-opened unidirectional stream'));
    } catch (e) {
      ends.push(Promise.resolve({ error: err(e) }));
    }
  }
  return Promise.all(ends);
}

async function probe() {
  const value = Uint8Array.from(q.get('hash').match(/../g), (h) => parseInt(h, 16));
  const wt = new WebTransport(q.get('url'), { serverCertificateHashes: [{ algorithm: 'sha-256', value }] });
  wt.closed.catch(() => {});
  try {
    await bounded(wt.ready, 'session');
    out.session = 'ok';
  } catch (e) {
    out.session = err(e);
    return;
  }
  const dgrams = wt.datagrams.readable.getReader();
  // The server's two streams, read from the start and at once: a read is
  // pending when they come (Firefox 140 delivers only the first of the
  // streams that arrive while no read is pending, whatever the server), and
  // their order of arrival is not theirs of opening in every client.
  const unis = readUnis(wt.incomingUnidirectionalStreams.getReader());
  try {
    const s = await bounded(wt.createBidirectionalStream(), 'opening a bidirectional stream');
    const w = s.writable.getWriter();
    const r = s.readable.getReader();
    await w.write(enc.encode('hello deno'));
    out.bidi = await readN(r, 10);
    await w.close();
    const { text, end } = await readEnd(r, 'the server\'s FIN');
    out.bidiFin = text === '' ? end : end + ' after more bytes: ' + JSON.stringify(text);
  } catch (e) {
    out.bidi = err(e);
  }
  // The one that starts with "uni" is the finished one, the other the
  // aborted one.
  let finished = false;
  for (const { text, end, error } of await unis) {
    if (!finished && (error || text.startsWith('uni'))) {
      finished = true;
      [out.uni, out.uniFin] = error ? [error, ''] : [text, end];
    } else {
      [out.aborted, out.abortedEnd] = error ? [error, ''] : [text, end];
    }
  }
  try {
    const w = wt.datagrams.writable.getWriter();
    await w.write(enc.encode('datagram'));
    const { value: d } = await bounded(dgrams.read(), 'the datagram\'s echo');
    out.datagram = dec.decode(d);
  } catch (e) {
    out.datagram = err(e);
  }
  // Last, the server closes the session (asked on a stream of its own).
  try {
    const s = await bounded(wt.createBidirectionalStream(), 'opening the stream that asks for the close');
    await s.writable.getWriter().write(enc.encode('close'));
    const info = await bounded(wt.closed, 'the session\'s close');
    out.close = 'closed: ' + info.closeCode + ' ' + JSON.stringify(info.reason);
  } catch (e) {
    out.close = err(e);
    try { wt.close({ closeCode: 0, reason: '' }); } catch { /* closed already */ }
  }
}

probe().catch((e) => { out.error = err(e); }).finally(() => { window.__result = out; });
