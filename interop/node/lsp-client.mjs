// An MCP client in Content-Length framing written with vscode-jsonrpc (the
// LSP library), independent of this repository: it spawns the command given
// as arguments as its stdio server, initializes, calls echo, prints the
// results as one JSON line, and exits.
import { spawn } from 'node:child_process';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node.js';

const [cmd, ...args] = process.argv.slice(2);
const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'] });
const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
conn.listen();
const init = await conn.sendRequest('initialize', {
  protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'vscode-jsonrpc-client', version: '1' },
});
conn.sendNotification('notifications/initialized');
const echo = await conn.sendRequest('tools/call', { name: 'echo', arguments: { message: '日本語のメッセージ' } });
process.stdout.write(JSON.stringify({ serverInfo: init.serverInfo, echo }) + '\n');
conn.dispose();
child.stdin.end();
child.on('exit', (code) => process.exit(code ?? 1));
