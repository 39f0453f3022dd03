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
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
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
    const sessions = new Map();
    const h = {
        fetch: async request => {
            const sid = request.headers.get('mcp-session-id');
            let t = sid && sessions.get(sid);
            if (sid && !t) {
                return new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'session not found' } }), { status: 404, headers: { 'content-type': 'application/json' } });
            }
            if (!t) {
                t = new WebStandardStreamableHTTPServerTransport({
                    sessionIdGenerator: () => randomUUID(),
                    onsessioninitialized: id => sessions.set(id, t),
                    onsessionclosed: id => sessions.delete(id),
                });
                await factory().connect(t);
            }
            return t.handleRequest(request);
        },
    };
    const srv = http.createServer(async (req, res) => {
        const ac = new AbortController();
        res.on('close', () => { if (!res.writableFinished) ac.abort(); });
        const headers = new Headers();
        for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
        const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'DELETE';
        try {
            const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body: hasBody ? Readable.toWeb(req) : undefined, duplex: 'half', signal: ac.signal });
            const response = await h.fetch(request);
            res.writeHead(response.status, Object.fromEntries(response.headers));
            if (!response.body) return res.end();
            const body = Readable.fromWeb(response.body);
            res.on('close', () => body.destroy());
            body.on('error', () => res.destroy());
            body.pipe(res);
        } catch (e) {
            log('request failed', e?.message);
            if (!res.headersSent) res.writeHead(500);
            res.end();
        }
    });
    srv.keepAliveTimeout = 60000;
    srv.listen(Number(port ?? 0), '127.0.0.1', () => {
        process.stdout.write(`listening http://127.0.0.1:${srv.address().port}/mcp\n`);
    });
    // Ending: the client's keep-alive and SSE connections too (close alone
    // waits for every one of them).
    const stop = () => { srv.close(() => process.exit(0)); srv.closeAllConnections(); };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    process.stdin.on('end', stop);
    process.stdin.resume();
} else {
    log('usage: server.mjs stdio | http [port]');
    process.exit(2);
}
