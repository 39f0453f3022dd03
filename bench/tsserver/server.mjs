// server.mjs: the TypeScript SDK baseline of the benchmarks (issue 29): an
// MCP server of the official TypeScript SDK v2 (@modelcontextprotocol/server,
// the version interop/node installs for the interop tests), with the same
// tools as bench/sdkfixture (the go-sdk baseline) and mcp-flow-server's
// test tools, served over its Streamable HTTP or its stdio transport.
//
//   node server.mjs stdio
//   node server.mjs http [port]     (prints "listening <url>" on stdout)
//
// Tools: echo {text}; generate {bytes} and blob {bytes} (bytes deterministic
// bytes as image content, inline base64, as a large result must travel
// there); progress {steps, delayMs} (one notifications/progress per step when
// the request has a progressToken). Over HTTP, the 2025 revisions with
// sessions (the SDK's stateful transport, as most servers run it); over
// stdio, the SDK's default entry point (2025 and 2026-07-28). Logs go to stderr only. The HTTP server
// binds 127.0.0.1 and ends at stdin's EOF, SIGINT or SIGTERM.
import { serveHTTP, sessionHandler } from '../../interop/node/serve-http.mjs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(new URL('../../interop/node/package.json', import.meta.url));
const load = async (spec, file) => import(pathToFileURL(require.resolve(spec).replace(/[^/]*$/, file)).href);
const { McpServer, WebStandardStreamableHTTPServerTransport } = await load('@modelcontextprotocol/server', 'index.mjs');
const { serveStdio } = await load('@modelcontextprotocol/server/stdio', 'stdio.mjs');
const { z } = await import(pathToFileURL(require.resolve('zod')).href);

const [mode, port] = process.argv.slice(2);
const log = (...a) => process.stderr.write('ts-sdk-bench: ' + a.join(' ') + '\n');

// blob returns n bytes: byte i is i mod 251 (a pattern no compressor
// flattens to nothing, cheap to make), as base64 image data.
function blob(n) {
    const b = Buffer.allocUnsafe(n);
    for (let i = 0; i < Math.min(n, 251 * 1024); i++) b[i] = i % 251;
    for (let done = 251 * 1024; done < n; done *= 2) b.copy(b, done, 0, Math.min(done, n - done));
    return { content: [{ type: 'image', data: b.toString('base64'), mimeType: 'application/octet-stream' }] };
}

function factory() {
    const server = new McpServer({ name: 'ts-sdk-bench', version: '2.4.0' }, { capabilities: { tools: {} } });
    const text = t => ({ content: [{ type: 'text', text: t }] });
    server.registerTool('echo', { description: 'echoes text', inputSchema: z.object({ text: z.string() }) }, async ({ text: t }) => text(t));
    const bytes = { inputSchema: z.object({ bytes: z.number().int().nonnegative() }) };
    server.registerTool('generate', { description: 'bytes deterministic bytes, inline base64', ...bytes }, async ({ bytes: n }) => blob(n));
    server.registerTool('blob', { description: 'bytes deterministic bytes, inline base64 (generate)', ...bytes }, async ({ bytes: n }) => blob(n));
    server.registerTool('progress', { description: 'reports progress (delayMs apart)', inputSchema: z.object({ steps: z.number().int(), delayMs: z.number().int().optional() }) }, async ({ steps, delayMs }, ctx) => {
        const token = ctx.mcpReq._meta?.progressToken;
        for (let i = 1; token !== undefined && i <= steps; i++) {
            if (i > 1 && delayMs) await new Promise(r => setTimeout(r, delayMs));
            await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps, message: `step ${i}` } });
        }
        return text(`done ${steps}`);
    });
    return server;
}

if (mode === 'stdio') {
    process.stdout.setMaxListeners(0); // the SDK adds a drain listener per pending write
    serveStdio(factory, { legacy: 'serve', onerror: e => log('error', e?.message) });
} else if (mode === 'http') {
    // Sessions as most servers hold them (the SDK's stateful transport, one
    // McpServer per Mcp-Session-Id), as the go-sdk baseline does too.
    serveHTTP(sessionHandler(WebStandardStreamableHTTPServerTransport, factory), port, log);
} else {
    log('usage: server.mjs stdio | http [port]');
    process.exit(2);
}
