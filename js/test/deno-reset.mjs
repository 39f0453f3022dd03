// deno-reset.mjs is the reproduction of Deno's reset-before-prefix bug
// (js/deno_reset_test.go, TestDenoResetBeforePrefix): it opens a
// WebTransport session to URL (pinning the certificate by its SHA-256 hex
// HASH), reads incomingUnidirectionalStreams for up to 5 s, and prints one
// JSON line: each stream's text or error, the error that ended the
// incoming streams, and the unhandled rejections seen.
//   deno run --unstable-net --allow-net=127.0.0.1 test/deno-reset.mjs URL HASH
const [url, hash] = Deno.args;
const out = { streams: [], incomingError: null, unhandled: [], timedOut: false };
globalThis.addEventListener('unhandledrejection', (e) => { out.unhandled.push(String(e.reason)); e.preventDefault(); });
const value = Uint8Array.from(hash.match(/../g), (h) => parseInt(h, 16));
const wt = new WebTransport(url, { serverCertificateHashes: [{ algorithm: 'sha-256', value }] });
wt.closed.catch(() => {});
await wt.ready;
const reader = wt.incomingUnidirectionalStreams.getReader();
let timer;
const timeout = new Promise((r) => { timer = setTimeout(() => r('timeout'), 5000); });
async function readText(stream) {
  try {
    return { text: await new Response(stream).text() };
  } catch (e) {
    return { error: String(e) };
  }
}
for (;;) {
  const r = await Promise.race([reader.read().catch((e) => ({ error: e })), timeout]);
  if (r === 'timeout') { out.timedOut = true; break; }
  if (r.error) { out.incomingError = String(r.error); break; }
  if (r.done) break;
  const s = await readText(r.value);
  out.streams.push(s);
  if (s.text === 'after the reset') break;
}
clearTimeout(timer);
const bytes = new TextEncoder().encode(JSON.stringify(out) + '\n');
for (let off = 0; off < bytes.length;) off += await Deno.stdout.write(bytes.subarray(off));
Deno.exit(0);
