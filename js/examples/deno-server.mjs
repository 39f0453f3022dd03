// An MCP server of the TypeScript SDK v2 over MCP-Flow, on Deno (js/src/server.js; docs/INTEROP.md):
//   deno run --unstable-net --allow-net --allow-read --allow-env examples/deno-server.mjs cert.pem key.pem [port]
// Then: mcp-flow -url https://127.0.0.1:4433/mcp-flow -cert-hash HASH call generate bytes=67108864 | sha256sum
import { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { serveMcpFlow } from '../src/server.js';

const xorshift = (x, M) => { x ^= (x << 13n) & M; x ^= x >> 7n; return x ^ ((x << 17n) & M); };
// generated returns the first n bytes of spec §5.5's sequence (mcp-flow-server's generate).
export function generated(n) {
  const p = new DataView(new ArrayBuffer(65536)), out = new Uint8Array(n), M = (1n << 64n) - 1n;
  for (let i = 0, x = 0x9E3779B97F4A7C15n; i < 8192; i++) p.setBigUint64(i * 8, x = xorshift(x, M), true);
  for (let k = 0; k * 65536 < n; k++) {
    p.setBigUint64(0, BigInt(k), false);
    out.set(new Uint8Array(p.buffer, 0, Math.min(65536, n - k * 65536)), k * 65536);
  }
  return out;
}

export function exampleTools(server, text = (t) => ({ content: [{ type: 'text', text: t }] })) {
  server.registerTool('echo', { description: 'Returns its text', inputSchema: z.object({ text: z.string() }) }, async ({ text: t }) => text(t));
  server.registerTool('generate', { description: 'bytes deterministic bytes (spec §5.5); past 256 KiB the transport moves them to an execution stream', inputSchema: z.object({ bytes: z.number().int().min(0) }) },
    async ({ bytes }) => ({ content: [{ type: 'resource', resource: { uri: `generate:${bytes}`, mimeType: 'application/octet-stream', blob: generated(bytes).toBase64() } }] }));
  server.registerTool('progress', { description: 'steps progress notifications, delayMs apart', inputSchema: z.object({ steps: z.number().int().min(1), delayMs: z.number().int().min(0).optional() }) },
    async ({ steps, delayMs = 10 }, ctx) => {
      for (let i = 1, token = ctx.mcpReq._meta?.progressToken; i <= steps && token !== undefined; i++) {
        await new Promise((r) => setTimeout(r, delayMs));
        await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps } });
      }
      return text(`done ${steps}`);
    });
  return server;
}
if (import.meta.main) {
  const [cert, key, port = '4433'] = Deno.args;
  const srv = await serveMcpFlow({ cert: Deno.readTextFileSync(cert), key: Deno.readTextFileSync(key), port: Number(port),
    path: '/mcp-flow', factory: () => exampleTools(new McpServer({ name: 'deno-example', version: '0.1.0' })) });
  console.error(`MCP-Flow on https://127.0.0.1:${srv.port}/mcp-flow`);
}
