// deno.mjs runs peer.js in Deno (WebTransport behind --unstable-net) with
// the query in its first argument, and prints the result as one JSON line
// (internal/browsertest.DriveDeno). It exits when done: an open
// WebTransport keeps Deno's event loop alive.
import { run } from './peer.js';

const result = await run(new URLSearchParams(Deno.args[0] || ''));
result.userAgent = navigator.userAgent;
const bytes = new TextEncoder().encode(JSON.stringify(result) + '\n');
for (let off = 0; off < bytes.length;) off += await Deno.stdout.write(bytes.subarray(off));
Deno.exit(0);
