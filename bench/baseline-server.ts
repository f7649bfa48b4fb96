// The HTTP baseline: a bare Fastify route returning a fixed JSON body the size of a resource (the
// benchmark passes a real resource of the seeded database in BENCH_BODY). No logger, no hooks, no
// database: the most requests per second this machine serves through Fastify.
import Fastify from 'fastify';
import type { AddressInfo } from 'node:net';
import './watchdog.js';
import type { Listening } from './protocol.js';

const body = JSON.parse(process.env.BENCH_BODY ?? '{}') as Record<string, unknown>;
const app = Fastify({ logger: false });
app.get('/resource', async () => body);

await app.listen({ port: 0, host: '127.0.0.1' });
const message: Listening = { type: 'listening', port: (app.server.address() as AddressInfo).port };
process.send?.(message);

process.on('SIGTERM', () => {
  void app.close().then(() => process.exit(0));
});
