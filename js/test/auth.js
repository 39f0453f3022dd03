// The access-token test page (docs/spec.md §9.1, "Browsers"), for
// js/auth_test.go, in Chromium and Firefox alike. It reads its settings from
// /auth-config.json (not its own URL, so that no token is in a page URL)
// and leaves its findings in window.__result.
//
// probe: does this engine's WebTransport send headers? It asks
// webTransportSendsHeaders (the getter probe), opens a raw WebTransport with
// an Authorization header, then WebTransportClientTransport with tokenIn
// 'auto', 'query' and 'header', and once with a wrong certificate hash and
// the token in the query (whose error must not name the token); the Go
// side's recorder says what each CONNECT carried.
//
// sdk: the official SDK clients (v2 @modelcontextprotocol/client, v1
// @modelcontextprotocol/sdk) over the transport against a server that
// checks tokens: with a valid token (whoami gives its subject), without a
// token, and with a bad one (each must fail, the page seeing why).
import { Client as ClientV2, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { WebTransportClientTransport, webTransportSendsHeaders } from '../src/index.js';

// Every console call of the page's scripts (the transport's among them),
// apart from the browser's own messages, which the driver collects.
const ownConsole = [];
for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
  const orig = console[level].bind(console);
  console[level] = (...args) => { ownConsole.push(level + ': ' + args.map(String).join(' ')); orig(...args); };
}

const errorText = (e) => `${e && e.name}: ${e && e.message}${e && e.cause ? ' (cause: ' + (e.cause.message || e.cause) + ')' : ''}`;

// within settles with {value} or {error}, or {timeout} after ms.
function within(ms, p) {
  let timer;
  return Promise.race([
    p.then((value) => ({ value }), (error) => ({ error: errorText(error) })),
    new Promise((resolve) => { timer = setTimeout(() => resolve({ timeout: true }), ms); }),
  ]).finally(() => clearTimeout(timer));
}

const probeURL = (base, name) => { const u = new URL(base); u.searchParams.set('probe', name); return u.toString(); };

async function probe(cfg) {
  const out = { sendsHeaders: webTransportSendsHeaders(), steps: {} };
  // The engine itself: headers straight to WebTransport.
  const raw = await within(10000, (async () => {
    const wt = new WebTransport(probeURL(cfg.url, 'raw'), {
      serverCertificateHashes: [{ algorithm: 'sha-256', value: Uint8Array.from(cfg.hash.match(/../g), (h) => parseInt(h, 16)) }],
      headers: { Authorization: `Bearer ${cfg.token}-raw` },
    });
    await wt.ready;
    wt.close({ closeCode: 0, reason: 'probe done' });
    return 'ready';
  })());
  out.steps.raw = raw;
  // The transport, placing the token itself; each start() asks the token
  // function anew.
  let calls = 0;
  for (const tokenIn of ['auto', 'query', 'header']) {
    const t = new WebTransportClientTransport(probeURL(cfg.url, tokenIn), {
      serverCertificateHashes: cfg.hash, transport: 'mcp-flow', tokenIn,
      token: async () => `${cfg.token}-${++calls}`,
    });
    const r = await within(10000, t.start());
    out.steps[tokenIn] = { ...r, placement: t.tokenPlacement, calls };
    await within(5000, t.close());
  }
  // A failure whose URL carries the token: the error names it redacted.
  const bad = new WebTransportClientTransport(probeURL(cfg.url, 'badhash'), {
    serverCertificateHashes: '00'.repeat(32), transport: 'mcp-flow', tokenIn: 'query', token: `${cfg.token}-badhash`,
  });
  out.steps.badhash = { ...(await within(15000, bad.start())), placement: bad.tokenPlacement };
  return out;
}

async function sdkCase(cfg, version, token) {
  const opts = { serverCertificateHashes: cfg.hash, transport: 'mcp-flow' };
  if (token !== undefined) opts.token = token;
  const transport = new WebTransportClientTransport(cfg.url, opts);
  const info = { name: 'mcp-flow-js-auth-' + version, version: '0.1.0' };
  const client = version === 'v2' ? new ClientV2(info, { capabilities: {} }) : new ClientV1(info, { capabilities: {} });
  const res = { version };
  const conn = await within(15000, client.connect(transport));
  res.placement = transport.tokenPlacement;
  if (conn.error || conn.timeout) return { ...res, connect: conn };
  const r = await within(10000, client.callTool({ name: 'whoami', arguments: {} }));
  if (r.value) res.whoami = r.value.structuredContent || r.value.content;
  else res.call = r;
  await within(5000, client.close());
  return res;
}

async function sdk(cfg) {
  return {
    valid: await sdkCase(cfg, 'v2', async () => cfg.token),
    validV1: await sdkCase(cfg, 'v1', () => cfg.token),
    none: await sdkCase(cfg, 'v2', undefined),
    bad: await sdkCase(cfg, 'v2', cfg.badToken),
    fallback: await fallbackCase(cfg),
  };
}

// fallbackCase: the fallback (the SDK's StreamableHTTPClientTransport,
// forced) against the page's own origin, whose /mcp checks the token:
// connect, and call ping.
async function fallbackCase(cfg) {
  const transport = new WebTransportClientTransport(location.origin + '/mcp', {
    transport: 'streamable-http', fallback: StreamableHTTPClientTransport, token: async () => cfg.token,
  });
  const client = new ClientV2({ name: 'mcp-flow-js-auth-fallback', version: '0.1.0' }, { capabilities: {} });
  const res = { version: 'v2' };
  const conn = await within(15000, client.connect(transport));
  res.placement = transport.tokenPlacement;
  if (conn.error || conn.timeout) return { ...res, connect: conn };
  const r = await within(10000, client.callTool({ name: 'ping', arguments: {} }));
  if (r.value) res.ping = r.value.content[0].text;
  else res.call = r;
  await within(5000, client.close());
  return res;
}

(async () => {
  const cfg = await (await fetch('/auth-config.json', { cache: 'no-store' })).json();
  try {
    window.__result = cfg.mode === 'probe' ? await probe(cfg) : await sdk(cfg);
    window.__result.ownConsole = ownConsole;
  } catch (e) {
    window.__result = { error: String(e && e.stack || e) };
  }
})();
