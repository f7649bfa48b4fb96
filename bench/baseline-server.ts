// The HTTP baseline and its two floors, in one bare Fastify process with no database:
// - /resource: a fixed JSON body the size of a resource (the benchmark passes a real resource of
//   the seeded database in BENCH_BODY). No logger, no hooks: the most requests per second this
//   machine serves through Fastify. Every HTTP row's ratio is to this.
// - /contract/resource: the same body with only what the API contract makes every authenticated
//   response do, whatever the service's own logic: the response headers the service sent for the
//   resource (BENCH_HEADERS), a fresh X-Request-Id, the presented key's SHA-256 (how keys are looked
//   up) and one request log line (pino through the service's own log destination, to a file). The
//   most a GET of the API could reach here.
// - /page: the event page row's response as fixed bytes (BENCH_PAGE_FILE), bare: what sending a
//   body of that size costs this machine, with nothing else.
import { openSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { pino } from 'pino';
import { BatchedLogDestination } from '../src/platform/log-destination.js';
import { sha256Hex } from '../src/platform/ids.js';
import './watchdog.js';
import type { Listening } from './protocol.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const body = JSON.parse(process.env.BENCH_BODY ?? '{}') as Record<string, unknown>;
const resourceBytes = Buffer.from(JSON.stringify(body));
const contractHeaders = JSON.parse(process.env.BENCH_HEADERS ?? '{}') as Record<string, string>;
const page = process.env.BENCH_PAGE_FILE ? readFileSync(process.env.BENCH_PAGE_FILE) : Buffer.from('{}');
const logFd = process.env.BENCH_LOG_FILE ? openSync(process.env.BENCH_LOG_FILE, 'a') : 1;
const log = pino({ level: 'info' }, new BatchedLogDestination(logFd));

const app = Fastify({ logger: false });
app.get('/resource', async () => body);

let requestCount = 0;
app.get(
  '/contract/resource',
  {
    onResponse: (request, reply, done) => {
      log.info(
        {
          requestId: reply.getHeader('x-request-id'),
          method: request.method,
          url: request.url,
          statusCode: reply.statusCode,
          responseTimeMs: Math.round(reply.elapsedTime * 10) / 10,
        },
        'request completed',
      );
      done();
    },
  },
  (request, reply) => {
    const authorization = request.headers.authorization ?? '';
    sha256Hex(authorization.slice(authorization.indexOf(' ') + 1));
    requestCount++;
    reply
      .headers(contractHeaders)
      .header('x-request-id', `req_${requestCount.toString(16).padStart(32, '0')}`)
      .type(JSON_TYPE)
      .send(resourceBytes);
  },
);

app.get('/page', (_request, reply) => {
  reply.type(JSON_TYPE).send(page);
});

await app.listen({ port: 0, host: '127.0.0.1' });
const message: Listening = { type: 'listening', port: (app.server.address() as AddressInfo).port };
process.send?.(message);

process.on('SIGTERM', () => {
  void app.close().then(() => process.exit(0));
});
