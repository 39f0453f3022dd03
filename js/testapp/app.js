// A web app that uses @mcp-flow/webtransport as installed from its npm
// tarball (js/pack_test.go: npm pack, npm install into a fresh project,
// esbuild, headless Chromium): an SDK v2 client connects to mcp-flow-server
// with the certificate hash it printed, lists the tools, calls echo, closes,
// and leaves what it saw in window.__result.
import { Client } from '@modelcontextprotocol/client';
import { WebTransportClientTransport } from '@mcp-flow/webtransport';

async function run() {
  const q = new URLSearchParams(location.search);
  const transport = new WebTransportClientTransport(q.get('url'), { serverCertificateHashes: q.get('hash') });
  const client = new Client({ name: 'mcp-flow-testapp', version: '0.0.0' });
  let closed = false;
  await client.connect(transport);
  const prevClose = transport.onclose;
  transport.onclose = () => { closed = true; if (prevClose) prevClose(); };
  const out = { encoding: transport.encoding, serverTransport: transport.serverTransport };
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  const echo = await client.callTool({ name: 'echo', arguments: { text: q.get('text') } });
  out.echo = echo.content[0].text;
  await client.close();
  out.closed = closed;
  return out;
}

run().then((r) => { window.__result = r; }, (e) => { window.__result = { error: String((e && e.stack) || e) }; });
