// buildApp(config): the whole HTTP service as a Fastify instance, apart from listening, so the
// server, the CLI and the tests (inject() and real sockets alike) share it.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { pino } from 'pino';
import type { Config } from './config.js';
import { openContext, type AppContext, type ContextOptions } from './context.js';
import { installAccess } from './platform/access.js';
import { installIdempotency } from './platform/idempotency.js';
import { BatchedLogDestination } from './platform/log-destination.js';
import { ACCESS_LINE_MESSAGE, JSON_LOG_OUTPUT, type LogOutput, PrettyLogLines } from './platform/log-format.js';
import { answerClientError, frameworkProblem, installHttpContract, sendError } from './platform/http-contract.js';
import { installOpenApi } from './platform/openapi.js';
import { requestIdFor } from './platform/request-id.js';
import { lazyChildLogger } from './platform/request-logger.js';
import { installValidation } from './platform/validation.js';
import { BODY_LIMIT, MAX_PATH_PARAMETER_LENGTH } from './platform/request-limits.js';
import { UNMATCHED_ROUTE } from './platform/metrics.js';
import { AREAS } from './areas/index.js';
import { startBackgroundWork } from './workers/background.js';

declare module 'fastify' {
  interface FastifyInstance {
    context: AppContext;
  }
}

export interface BuildOptions extends ContextOptions {
  /** An already open context; the app then leaves closing it to the caller. */
  context?: AppContext;
  logger?: FastifyServerOptions['logger'];
  /**
   * Without `logger`: where the service's own lines go (standard output, batched, by default) and in
   * which form (JSON lines by default; `devdata serve` on a terminal asks for pretty ones).
   */
  log?: { destination: BatchedLogDestination; output: LogOutput };
}

/** The service's own logger: JSON lines (or lines for people) on standard output, batched per turn of the event loop. */
function serviceLogger(config: Config, destination: BatchedLogDestination, output: LogOutput): FastifyBaseLogger {
  return pino(
    {
      level: config.logLevel,
      // Secrets travel in these headers; nothing that logs a request may print them.
      redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie', 'res.headers["set-cookie"]'], censor: '[redacted]' },
    },
    output.format === 'pretty' ? new PrettyLogLines(destination, output.color) : destination,
  );
}

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const context = options.context ?? (await openContext(config, options));
  const ownsContext = options.context === undefined;
  const { services } = context;

  const destination = options.logger === undefined ? (options.log?.destination ?? new BatchedLogDestination()) : undefined;
  const app = Fastify({
    ...(destination ? { loggerInstance: serviceLogger(config, destination, options.log?.output ?? JSON_LOG_OUTPUT) } : { logger: options.logger }),
    genReqId: requestIdFor,
    childLoggerFactory: lazyChildLogger,
    requestIdHeader: false,
    // One log line per request, written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    trustProxy: config.trustProxy,
    bodyLimit: BODY_LIMIT,
    routerOptions: { maxParamLength: MAX_PATH_PARAMETER_LENGTH },
    return503OnClosing: true,
    clientErrorHandler: answerClientError,
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      sendError(request, reply, frameworkProblem(error));
    },
  });
  app.decorate('context', context);

  installValidation(app);
  installHttpContract(app);
  installAccess(app, { config, resolvers: [services.keys, services.oauth], limiter: context.rateLimiter });
  installIdempotency(app, context.idempotentRequests);

  const { metrics } = context;
  // A callback hook, not an async one: it runs on every response and has nothing to wait for.
  app.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode;
    if (request.credential) services.usage.count(request.credential.accountId, { requests: 1, errors: status >= 400 ? 1 : 0 });
    // The route pattern, never the URL: one series per route, whatever the ids in the path.
    if (metrics)
      metrics.request(request.method, request.is404 ? UNMATCHED_ROUTE : (request.routeOptions.url ?? UNMATCHED_ROUTE), status, reply.elapsedTime / 1000);
    // Through the root logger with the id, the same line request.log would write, without making it.
    app.log.info(
      { requestId: request.id, method: request.method, url: request.url, statusCode: status, responseTimeMs: Math.round(reply.elapsedTime * 10) / 10 },
      ACCESS_LINE_MESSAGE,
    );
    done();
  });

  await installOpenApi(
    app,
    config,
    AREAS.flatMap((area) => area.schemas ?? []),
    { securitySchemes: Object.assign({}, ...AREAS.map((area) => area.securitySchemes ?? {})) },
  );
  // Each area's line of GET /api/v1/capabilities, from the constants its own rules use.
  const capabilities = AREAS.flatMap((area) => (area.capability ? [area.capability(config)] : []));
  const routeContext = { config, clock: context.clock, services, streams: context.streams, capabilities };
  for (const area of AREAS) await area.registerRoutes?.(app, routeContext);

  const background = startBackgroundWork(context, app.log);
  // Streams never finish on their own: end them first so closing the server does not wait on them.
  app.addHook('preClose', async () => context.streams.closeAll());
  app.addHook('onClose', async () => {
    await background.stop();
    if (ownsContext) await context.close();
    destination?.close();
  });

  return app;
}

/** Listens, and without an explicit BASE_URL makes the base address name the port actually bound. */
export async function listen(app: FastifyInstance, config: Config, options: { port: number; host: string }): Promise<string> {
  const address = await app.listen(options);
  const bound = app.server.address();
  if (!config.baseUrlExplicit && bound !== null && typeof bound === 'object') config.baseUrl = `http://localhost:${bound.port}`;
  return address;
}
