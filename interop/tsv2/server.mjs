// server.mjs: an MCP server of the official TypeScript SDK v2
// (@modelcontextprotocol/server 2.4) for the upstream interop tests
// (spec §10, "Eras"; issue 15).
//
//   node server.mjs stdio <era>
//   node server.mjs http <era> [port]     (prints "listening <url>" on stdout)
//
// era: modern  2026-07-28 only (the SDK's own 2025 refusal: legacy 'reject')
//      legacy  2025 revisions only (a hand-wired McpServer: initialize, sessions)
//      both    the SDK's default entry points: 2026-07-28 and 2025
//
// Tools: echo {text}; big {size} (a text of size bytes); progress {steps,
// delayMs} (one notifications/progress per step, delayMs apart, when the
// request has a progressToken); slow (progress 1 once it runs, then waits until
// cancelled, and counts the cancellation); stats {atLeast} (the
// cancellations counted so far, as JSON, once there are atLeast); ask (a
// 2026-07-28 input_required result); sample (a sampling request to the
// client, 2025 only); fail (an error: the SDK answers isError). Logs go to
// stderr only.
import { serveHTTP, sessionHandler } from '../node/serve-http.mjs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

// The SDK is installed in interop/node (npm install there), beside this
// folder; zod is its dependency.
const require = createRequire(new URL('../node/package.json', import.meta.url));
const load = async (spec, file) => import(pathToFileURL(require.resolve(spec).replace(/[^/]*$/, file)).href);
const { McpServer, createMcpHandler, WebStandardStreamableHTTPServerTransport } = await load('@modelcontextprotocol/server', 'index.mjs');
const { serveStdio, StdioServerTransport } = await load('@modelcontextprotocol/server/stdio', 'stdio.mjs');
const { z } = await import(pathToFileURL(require.resolve('zod')).href);

const [mode, era, port] = process.argv.slice(2);
const log = (...a) => process.stderr.write('tsv2-server: ' + a.join(' ') + '\n');
let cancelled = 0; // slow calls cancelled, over every instance of this process
let waiters = []; // stats calls waiting for a cancellation
const wake = () => { const w = waiters; waiters = []; w.forEach(r => r()); };

function factory() {
    const server = new McpServer({ name: 'tsv2-server', version: '2.4.0' }, { capabilities: { tools: {} }, instructions: 'TypeScript SDK v2 test server' });
    const text = t => ({ content: [{ type: 'text', text: t }] });
    server.registerTool('echo', { description: 'echoes text', inputSchema: z.object({ text: z.string() }) }, async ({ text: t }) => text(t));
    server.registerTool('big', { description: 'a text of size bytes', inputSchema: z.object({ size: z.number().int() }) }, async ({ size }) => text('x'.repeat(size)));
    server.registerTool('progress', { description: 'reports progress (delayMs apart)', inputSchema: z.object({ steps: z.number().int(), delayMs: z.number().int().optional() }) }, async ({ steps, delayMs }, ctx) => {
        const token = ctx.mcpReq._meta?.progressToken;
        for (let i = 1; token !== undefined && i <= steps; i++) {
            if (i > 1 && delayMs) await new Promise(r => setTimeout(r, delayMs));
            await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps, message: `step ${i}` } });
        }
        return text(`done ${steps}`);
    });
    server.registerTool('slow', { description: 'reports progress 1 (started), then waits until cancelled' }, async ctx => {
        const signal = ctx.mcpReq.signal;
        const token = ctx.mcpReq._meta?.progressToken;
        const ended = new Promise(resolve => {
            const t = setTimeout(resolve, 60000);
            signal.addEventListener('abort', () => { clearTimeout(t); cancelled++; log('slow cancelled', cancelled); wake(); resolve(); }, { once: true });
        });
        if (token !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: 1, message: 'started' } });
        await ended;
        return text(signal.aborted ? 'cancelled' : 'not cancelled in 60 s');
    });
    server.registerTool('stats', { description: 'the cancellations so far, once there are at least atLeast (waiting up to 20 s)', inputSchema: z.object({ atLeast: z.number().int().optional() }) }, async ({ atLeast }) => {
        const deadline = Date.now() + 20000;
        while (cancelled < (atLeast ?? 0) && Date.now() < deadline) await new Promise(r => { waiters.push(r); setTimeout(r, deadline - Date.now()); });
        return text(JSON.stringify({ cancelled }));
    });
    server.registerTool('ask', { description: 'a 2026-07-28 multi round-trip result (input_required)' }, async () => ({
        resultType: 'input_required',
        inputRequests: { confirm: { method: 'elicitation/create', params: { mode: 'form', message: 'proceed?', requestedSchema: { type: 'object', properties: {} } } } },
    }));
    server.registerTool('sample', { description: 'asks the client for sampling (2025 only: a server-initiated request)' }, async ctx => {
        const r = await ctx.mcpReq.requestSampling({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 });
        return text(JSON.stringify(r));
    });
    server.registerTool('fail', { description: 'fails' }, async () => { throw new Error('failing on purpose'); });
    return server;
}

if (mode === 'stdio') {
    if (era === 'legacy') {
        await factory().connect(new StdioServerTransport());
    } else {
        serveStdio(factory, { legacy: era === 'modern' ? 'reject' : 'serve', onerror: e => log('error', e?.message) });
    }
} else if (mode === 'http') {
    let handle;
    if (era === 'legacy') {
        // 2025 sessions: one McpServer per Mcp-Session-Id.
        handle = sessionHandler(WebStandardStreamableHTTPServerTransport, factory, { supportedProtocolVersions: ['2025-11-25', '2025-06-18', '2025-03-26'] });
    } else {
        const h = createMcpHandler(factory, { legacy: era === 'modern' ? 'reject' : 'stateless', onerror: e => log('error', e?.message) });
        handle = r => h.fetch(r);
    }
    serveHTTP(handle, port, log);
} else {
    log('usage: server.mjs stdio|http modern|legacy|both [port]');
    process.exit(2);
}
