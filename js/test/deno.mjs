// deno.mjs runs a test page's bundle (dist/test-page.js by default) in
// Deno, a server-side JavaScript host with WebTransport (--unstable-net),
// and prints what it left in globalThis.__result as one JSON line on stdout,
// as run.mjs does for Chromium and firefox.mjs for Firefox. The page's query
// comes from --location (Deno's location global):
//   deno run --unstable-net --allow-net=127.0.0.1 --allow-read=. --allow-env \
//     --location='http://127.0.0.1/test/index.html?url=...' test/deno.mjs [BUNDLE]
// (internal/browsertest.DriveDeno). It exits once the result is there: an
// open WebTransport (Deno's `closed` may never settle) would keep it alive.
globalThis.window = globalThis;
// The console goes into the result, as the drivers collect a page's: stdout
// carries the result alone.
const logs = [];
for (const k of ['log', 'info', 'warn', 'error', 'debug']) {
  console[k] = (...a) => logs.push(k + ': ' + a.map((x) => (typeof x === 'string' ? x : Deno.inspect(x))).join(' '));
}
const bundle = Deno.args[0] || '../dist/test-page.js';
await import(bundle);
while (globalThis.__result === undefined) await new Promise((r) => setTimeout(r, 20));
const result = globalThis.__result;
result.userAgent = navigator.userAgent;
result.console = logs;
const bytes = new TextEncoder().encode(JSON.stringify(result) + '\n');
for (let off = 0; off < bytes.length;) off += await Deno.stdout.write(bytes.subarray(off));
Deno.exit(0);
