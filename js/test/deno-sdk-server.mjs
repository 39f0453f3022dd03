// deno-sdk-server.mjs: the TypeScript SDK v2 server of js/deno_sdk_test.go
// (TestDenoSDKServer), served over MCP-Flow by js/src/server.js on Deno:
//   deno run --unstable-net --allow-net=127.0.0.1 --allow-read=. test/deno-sdk-server.mjs CERT.pem KEY.pem [maxConcurrentStreams]
// It prints {"port": N} on stdout once it listens, and runs until killed.
// Its tools are the example's (examples/deno-server.mjs: echo, progress,
// and its generate, one blob the transport moves to a stream past 256 KiB,
// as generate_blob), and those the
// conformance runner's server checks call, as mcp-flow-server has them
// (demotools): generate {bytes, streams} (with streams, each stream opened
// by the tool with the transport's openStream and written as the client
// reads), slow {steps, delayMs} (progress per step, honours cancellation)
// and fail_midstream {bytes} (the stream fails after bytes).
import { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { serveMcpFlow } from '../src/server.js';
import { exampleTools, generated } from '../examples/deno-server.mjs';

const [certFile, keyFile, maxStreams] = Deno.args;
const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

// writeStreams opens n streams for the request, all before writing any
// (so that one past maxConcurrentStreams fails the call, -32000), then
// writes bytes of the sequence on each while the result goes out.
async function writeStreams(transport, ctx, bytes, n) {
  const first = generated(65536); // block k is block 0 with k in its first 8 bytes (spec §5.5)
  const opened = [];
  for (let i = 0; i < n; i++) opened.push(await transport.openStream(ctx.mcpReq.id));
  const links = [];
  for (const s of opened) {
    links.push(s.link);
    (async () => {
      const w = s.writable.getWriter();
      for (let k = 0; k * 65536 < bytes; k++) {
        const b = first.slice();
        new DataView(b.buffer).setBigUint64(0, BigInt(k), false);
        await w.write(b.subarray(0, Math.min(65536, bytes - k * 65536)));
      }
      await w.close();
    })().catch(() => {});
  }
  return { content: links };
}

function factory(transport) {
  const server = exampleTools(new McpServer({ name: 'deno-sdk-server', version: '0.1.0' }));
  // The example's generate (one blob, which the transport moves to a
  // stream past 256 KiB) is generate_blob here; generate is the runner's
  // (spec §5.5: always on execution streams, as mcp-flow-server's).
  server._registeredTools.generate.update({ name: 'generate_blob' });
  server.registerTool('generate', { description: 'streams bytes of the sequence (spec §5.5) on each of streams execution streams',
    inputSchema: z.object({ bytes: z.number().int().min(0), streams: z.number().int().min(1).max(256).optional() }) },
  async ({ bytes, streams = 1 }, ctx) => writeStreams(transport, ctx, bytes, streams));
  server.registerTool('slow', { description: 'works steps x delayMs, progress after each step; honours cancellation',
    inputSchema: z.object({ steps: z.number().int().min(1).optional(), delayMs: z.number().int().min(0).optional() }) },
  async ({ steps = 10, delayMs = 100 }, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    for (let i = 1; i <= steps; i++) {
      await sleep(delayMs, ctx.mcpReq.signal);
      if (ctx.mcpReq.signal.aborted) throw new Error('cancelled');
      if (token !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps } });
    }
    return { content: [{ type: 'text', text: `done ${steps}` }] };
  });
  server.registerTool('fail_midstream', { description: 'streams bytes, then fails the stream', inputSchema: z.object({ bytes: z.number().int().min(0).optional() }) },
    async ({ bytes = 1000 }, ctx) => {
      const s = await transport.openStream(ctx.mcpReq.id);
      const w = s.writable.getWriter();
      (async () => {
        await w.write(generated(bytes));
        await w.abort(new Error(`failing on purpose after ${bytes} bytes`));
      })().catch(() => {});
      return { content: [s.link] };
    });
  return server;
}

const srv = await serveMcpFlow({
  cert: Deno.readTextFileSync(certFile), key: Deno.readTextFileSync(keyFile), path: '/mcp-flow', factory,
  ...(maxStreams ? { maxConcurrentStreams: Number(maxStreams) } : {}),
  log: (m) => console.error(m),
});
console.log(JSON.stringify({ port: srv.port }));
