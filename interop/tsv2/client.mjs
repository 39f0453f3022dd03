// client.mjs: the official TypeScript SDK v2 client (@modelcontextprotocol/client
// 2.4.0, installed in ../node) against an MCP server that has mcp-flow-server's
// test tools (echo, generate, slow, fail_midstream), reached through one of the
// MCP-Flow fronts, in a chosen era.
//
//   node client.mjs --era 2026|2025 [--tools flow|tsv2] --http URL
//   node client.mjs --era 2026|2025 [--tools flow|tsv2] --stdio CMD [ARGS...]
//
// --tools flow (the default) checks mcp-flow-server's test tools; --tools
// tsv2 checks the tools of tsv2/server.mjs (echo, big, progress, slow,
// stats, fail), so that the same checks run directly against that server
// and through the MCP-Flow chain to it, and their totals can be compared.
//
// --era 2026 pins 2026-07-28 (versionNegotiation {pin}: server/discover, then
// stateless requests with _meta); --era 2025 is the SDK's default legacy
// connect (initialize, 2025-11-25). It runs a fixed list of checks and prints
// one line per check ("PASS name: detail" or "FAIL name: why"), then
// "N passed, M failed". Exit status 0 when every check passed, 1 otherwise.
import { createHash } from 'node:crypto';

const sdk = new URL('../node/node_modules/@modelcontextprotocol/client/dist/', import.meta.url);
const { Client, StreamableHTTPClientTransport } = await import(new URL('index.mjs', sdk).href);

const args = process.argv.slice(2);
let era = '2026';
let tools = 'flow';
let url;
let command;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--era') era = args[++i];
  else if (args[i] === '--tools') tools = args[++i];
  else if (args[i] === '--http') url = args[++i];
  else if (args[i] === '--stdio') { command = args.slice(i + 1); break; }
}
if ((era !== '2026' && era !== '2025') || (tools !== 'flow' && tools !== 'tsv2') || (!url && !command?.length)) {
  console.error('usage: client.mjs --era 2026|2025 [--tools flow|tsv2] (--http URL | --stdio CMD [ARGS...])');
  process.exit(2);
}
const want = era === '2026' ? '2026-07-28' : '2025-11-25';

let transport;
if (url) {
  transport = new StreamableHTTPClientTransport(new URL(url));
} else {
  const { StdioClientTransport } = await import(new URL('stdio.mjs', sdk).href);
  transport = new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: 'inherit' });
}
const client = new Client({ name: 'tsv2-check', version: '1.0.0' }, era === '2026' ? { versionNegotiation: { mode: { pin: want } } } : {});

const results = [];
async function check(name, fn) {
  try {
    const detail = await fn();
    results.push({ name, ok: true, detail: detail ?? '' });
  } catch (e) {
    results.push({ name, ok: false, detail: e?.stack ?? String(e) });
  }
}
// increasing says whether progress values seen are at least one, each newer
// than the last, none past total: what a client may see of progress that a
// server or a front coalesces (spec §6.2, §11.6).
function increasing(seen, total) {
  return seen.length >= 1 && seen.every((p, i) => p >= 1 && p <= total && (i === 0 || p > seen[i - 1]));
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
// allText is a result's text wherever it is: text content, or a resource's
// text or base64 blob (an execution stream the front inlined, spec §10).
const allText = (r) => r.content.map((c) => c.type === 'text' ? c.text
  : c.type === 'resource' ? (c.resource.text ?? Buffer.from(c.resource.blob ?? '', 'base64').toString('utf8')) : '').join('');

let connected = false;
await check('connect', async () => {
  await client.connect(transport);
  connected = true;
  const v = client.getNegotiatedProtocolVersion();
  assert(v === want, `negotiated ${v}, want ${want}`);
  return `${v}, server ${client.getServerVersion()?.name}`;
});
if (connected) {
  await check(era === '2026' ? 'server/discover' : 'initialize', async () => {
    if (era === '2026') {
      const d = client.getDiscoverResult();
      assert(d?.supportedVersions?.includes(want), `discover result ${JSON.stringify(d)}`);
      return `supportedVersions ${d.supportedVersions.join(',')}`;
    }
    assert(client.getServerCapabilities()?.tools, `capabilities ${JSON.stringify(client.getServerCapabilities())}`);
    return 'capabilities.tools present';
  });
  if (tools === 'tsv2') {
  await check('tools/list', async () => {
    const { tools: list } = await client.listTools();
    const names = list.map((t) => t.name);
    for (const n of ['echo', 'big', 'progress', 'slow', 'stats', 'fail']) assert(names.includes(n), `no ${n} in ${names}`);
    return `${list.length} tools`;
  });
  await check('echo', async () => {
    const s = 'héllo, 日本語 🚀';
    const r = await client.callTool({ name: 'echo', arguments: { text: s } });
    assert(text(r) === s && !r.isError, `got ${JSON.stringify(r)}`);
    return 'text round trip';
  });
  await check('large result (2 MiB text)', async () => {
    const n = 2 << 20;
    const r = await client.callTool({ name: 'big', arguments: { size: n } });
    const t = allText(r);
    assert(t.length === n && /^x*$/.test(t), `${t.length} characters, want ${n} x's; content types ${r.content.map((c) => c.type)}`);
    return `${t.length} characters as ${r.content.map((c) => c.type).join('+')}`;
  });
  await check('progress', async () => {
    const seen = [];
    const r = await client.callTool({ name: 'progress', arguments: { steps: 4, delayMs: 50 } }, { onprogress: (p) => seen.push(p.progress) });
    assert(!r.isError && text(r) === 'done 4', JSON.stringify(r));
    // The SDK client drops updates read in the same chunk as the result
    // (seen directly, without MCP-Flow: all four sent at once arrive as
    // [1] or none), and a front may replace an update not yet written by a
    // newer one (spec §11.6): so the server spaces them 50 ms apart, and
    // the check asks for at least one, each newer than the last, none past
    // the total.
    assert(increasing(seen, 4), `progress ${JSON.stringify(seen)}`);
    return `${seen.length} of 4 updates, increasing`;
  });
  await check('cancel (AbortSignal) reaches the server', async () => {
    const ac = new AbortController();
    const call = client.callTool({ name: 'slow', arguments: {} }, {
      signal: ac.signal,
      onprogress: () => ac.abort('the check cancels'),
    });
    let err;
    try { await call; } catch (e) { err = e; }
    assert(err && ac.signal.aborted, `the call ${err ? 'failed without the abort' : 'resolved'}: ${err ?? ''}`);
    const r = await client.callTool({ name: 'stats', arguments: { atLeast: 1 } });
    const n = JSON.parse(text(r)).cancelled;
    assert(n >= 1, `the server counted ${n} cancellations (waited 20 s for one)`);
    return `rejected (${err?.name}); the server counted ${n} cancellation(s)`;
  });
  await check('error: a failing tool', async () => {
    let err, r;
    try { r = await client.callTool({ name: 'fail', arguments: {} }); } catch (e) { err = e; }
    assert(r?.isError && /failing on purpose/.test(text(r)), `got ${err ? `error ${err.code} ${err.message}` : JSON.stringify(r)}`);
    return 'isError result with the server\'s message';
  });
  } else {
  await check('tools/list', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of ['echo', 'generate', 'slow', 'fail_midstream']) assert(names.includes(n), `no ${n} in ${names}`);
    return `${tools.length} tools`;
  });
  await check('echo', async () => {
    const s = 'héllo, 日本語 🚀';
    const r = await client.callTool({ name: 'echo', arguments: { text: s } });
    assert(text(r) === s && !r.isError, `got ${JSON.stringify(r)}`);
    return 'text round trip';
  });
  await check('large result (2 MiB execution stream, inlined)', async () => {
    const n = 2 << 20;
    const r = await client.callTool({ name: 'generate', arguments: { bytes: n, sha256: true } });
    const blob = r.content.find((c) => c.type === 'resource')?.resource?.blob;
    assert(blob, `no resource blob in ${JSON.stringify(r).slice(0, 300)}`);
    const bytes = Buffer.from(blob, 'base64');
    const sum = createHash('sha256').update(bytes).digest('hex');
    assert(bytes.length === n && sum === r.structuredContent?.sha256, `${bytes.length} bytes, sha256 ${sum} vs ${r.structuredContent?.sha256}`);
    return `${bytes.length} bytes, sha256 matches`;
  });
  await check('progress', async () => {
    const seen = [];
    const r = await client.callTool({ name: 'slow', arguments: { steps: 4, delayMs: 50 } }, { onprogress: (p) => seen.push(p.progress) });
    assert(!r.isError, JSON.stringify(r));
    // The SDK runs a notification's handler a microtask later than it
    // settles a response read in the same chunk, so the updates read with
    // the result are overtaken inside the client and dropped (seen over
    // stdio, where they arrive in one read: once 4, once 3 and 4, when a
    // loaded machine let the server's writes of 40 ms pile up); and over
    // MCP-Flow an update not yet sent is replaced by a newer one (progress
    // datagrams are coalesced, spec §6.2: [1,4] seen through the HTTP
    // front under load). What the client got must be increasing, none
    // repeated or past the total, as in the check above.
    assert(increasing(seen, 4), `progress ${JSON.stringify(seen)}`);
    return `${seen.length} of 4 updates, increasing`;
  });
  await check('cancel (AbortSignal)', async () => {
    const ac = new AbortController();
    let updates = 0;
    const started = Date.now();
    const call = client.callTool({ name: 'slow', arguments: { steps: 1000, delayMs: 20 } }, {
      signal: ac.signal,
      onprogress: () => { if (++updates === 2) ac.abort('the check cancels'); },
    });
    let err;
    try { await call; } catch (e) { err = e; }
    assert(err, 'the cancelled call resolved');
    assert(ac.signal.aborted && updates >= 2, `aborted ${ac.signal.aborted}, ${updates} updates`);
    const ms = Date.now() - started;
    assert(ms < 15000, `the cancel took ${ms} ms (the call runs 20 s)`);
    const after = await client.callTool({ name: 'echo', arguments: { text: 'after the cancel' } });
    assert(text(after) === 'after the cancel', JSON.stringify(after));
    return `rejected after ${updates} updates (${err?.name}); the next call works`;
  });
  await check('error: a stream that fails mid-way', async () => {
    let err, r, threw = false;
    try { r = await client.callTool({ name: 'fail_midstream', arguments: { bytes: 65536 } }); } catch (e) { err = e; threw = true; }
    assert(threw || r?.isError, `a failed stream came back as a result: ${String(JSON.stringify(r)).slice(0, 200)}`);
    return err ? `rejected: code ${err.code}` : 'isError result';
  });
  await check('error: invalid arguments', async () => {
    let err, r;
    try { r = await client.callTool({ name: 'generate', arguments: { bytes: -1 } }); } catch (e) { err = e; }
    assert((err && err.code === -32602) || r?.isError, `got ${err ? `error ${err.code} ${err.message}` : JSON.stringify(r)}`);
    return err ? `rejected: code ${err.code}` : 'isError result';
  });
  // mcp-flow-server's toggle shows or hides a tool and tells every client
  // (spec §11.7): 2026-07-28 on a subscriptions/listen, acknowledged
  // first; 2025 unasked.
  await check(era === '2026' ? 'subscriptions/listen hears tools/list_changed' : 'tools/list_changed, unasked', async () => {
    let heard, timer;
    const changed = new Promise((resolve, reject) => {
      heard = resolve;
      // A hang guard: the change comes within 50 ms here.
      timer = setTimeout(() => reject(new Error('no notifications/tools/list_changed within 10 s')), 10000);
    });
    client.setNotificationHandler('notifications/tools/list_changed', (n) => heard(n));
    let sub;
    if (era === '2026') {
      sub = await client.listen({ toolsListChanged: true, promptsListChanged: true }, { timeout: 10000 });
      assert(sub.honoredFilter?.toolsListChanged && !sub.honoredFilter?.promptsListChanged, `acknowledged ${JSON.stringify(sub.honoredFilter)}`);
    }
    try {
      const r = await client.callTool({ name: 'toggle', arguments: {} });
      assert(/^toggled (shown|hidden)$/.test(text(r)), `toggle: ${JSON.stringify(r)}`);
      const n = await changed;
      return `${sub ? `acknowledged ${JSON.stringify(sub.honoredFilter)}, then ` : ''}${n.method} after "${text(r)}"`;
    } finally {
      clearTimeout(timer);
      await sub?.close();
    }
  });
  }
  await check('close', async () => {
    await client.close();
    return 'closed';
  });
}
let passed = 0;
for (const r of results) {
  if (r.ok) passed++;
  console.log(`${r.ok ? 'PASS' : 'FAIL'} ${r.name}: ${r.detail}`);
}
const failed = results.length - passed + (connected ? 0 : 0);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
