// deno.mjs runs the browser peer's scenario (src/page.js, unbundled) in
// Deno, whose WebTransport needs --unstable-net, and prints what it found
// as one JSON line on stdout, as run.mjs does for the page in Chromium:
//   deno run --unstable-net --allow-net=127.0.0.1 --allow-read=. --allow-env deno.mjs 'url=...&hash=...'
// (internal/browsertest.DriveDeno). It exits when done: Deno's `closed` may
// never settle, and an open WebTransport keeps its event loop alive.
import { run } from './src/page.js';
// The console goes into the result, as the drivers collect a page's: stdout
// carries the result alone.
const logs = [];
for (const k of ['log', 'info', 'warn', 'error', 'debug']) {
  console[k] = (...a) => logs.push(k + ': ' + a.map((x) => (typeof x === 'string' ? x : Deno.inspect(x))).join(' '));
}

const q = new URLSearchParams(Deno.args[0] || '');
const result = await run(q).catch((e) => ({ error: String(e && e.stack || e) }));
result.userAgent = navigator.userAgent;
result.console = logs;
const bytes = new TextEncoder().encode(JSON.stringify(result) + '\n');
for (let off = 0; off < bytes.length;) off += await Deno.stdout.write(bytes.subarray(off));
Deno.exit(0);
