// The stream floor: a bare node:http SSE broadcaster doing what the service's stream does, and
// nothing else. GET /stream opens a stream; POST /publish takes `{type, data}`, numbers it, and
// writes the same SSE message the service would (`id`, `event`, `data: <Event JSON>`) to every open
// stream before answering 201. Its latency is what this machine allows for the fan-out.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import './watchdog.js';
import type { Listening } from './protocol.js';

const streams = new Set<ServerResponse>();
let nextId = 0;

const server = createServer((request, response) => {
  if (request.method === 'GET' && request.url?.startsWith('/stream')) {
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive' });
    response.flushHeaders();
    streams.add(response);
    request.on('close', () => streams.delete(response));
    return;
  }
  if (request.method === 'POST' && request.url === '/publish') {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data: Record<string, unknown> };
      const event = { id: ++nextId, type: body.type, data: body.data, createdAt: new Date().toISOString() };
      const json = JSON.stringify(event);
      const frame = `id: ${event.id}\nevent: ${event.type}\ndata: ${json}\n\n`;
      for (const stream of streams) stream.write(frame);
      response.writeHead(201, { 'content-type': 'application/json; charset=utf-8' });
      response.end(json);
    });
    return;
  }
  response.writeHead(404).end();
});

server.listen(0, '127.0.0.1', () => {
  const message: Listening = { type: 'listening', port: (server.address() as AddressInfo).port };
  process.send?.(message);
});

process.on('SIGTERM', () => {
  for (const stream of streams) stream.end();
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
