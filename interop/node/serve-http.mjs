// Shared by the TypeScript SDK v2 servers of the interop tests
// (interop/tsv2/server.mjs) and of the benchmarks (bench/tsserver/server.mjs):
// the SDK's web-standard Streamable HTTP handlers served on node:http.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';

// sessionHandler answers requests with the SDK's stateful transport, one
// server (factory()) per Mcp-Session-Id, as most 2025 servers hold them;
// an unknown session id is 404 with -32001. options go to each transport.
export function sessionHandler(WebStandardStreamableHTTPServerTransport, factory, options = {}) {
    const sessions = new Map(); // Mcp-Session-Id → transport
    return async request => {
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
                ...options,
            });
            await factory().connect(t);
        }
        return t.handleRequest(request);
    };
}

// serveHTTP serves handle (Request → Response) on 127.0.0.1:port (0: any),
// prints "listening <url>" on stdout, and ends, its clients' keep-alive and
// SSE connections with it (close alone waits for each of them), at SIGINT,
// SIGTERM or stdin's EOF (the test's end of input: leave nothing behind).
export function serveHTTP(handle, port, log) {
    const srv = http.createServer(async (req, res) => {
        const ac = new AbortController();
        res.on('close', () => { if (!res.writableFinished) ac.abort(); });
        const headers = new Headers();
        for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
        const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'DELETE';
        try {
            const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body: hasBody ? Readable.toWeb(req) : undefined, duplex: 'half', signal: ac.signal });
            const response = await handle(request);
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
    const stop = () => { srv.close(() => process.exit(0)); srv.closeAllConnections(); };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    process.stdin.on('end', stop);
    process.stdin.resume();
}
