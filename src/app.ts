// buildApp(config): the whole HTTP service as a Fastify instance, apart from listening, so the
// server, the CLI and the tests (inject() and real sockets alike) share it.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { pino } from 'pino';
import type { Config } from './config.js';
import { openContext, type AppContext, type ContextOptions } from './context.js';
import { installAccess } from './platform/access.js';
import { BatchedLogDestination } from './platform/log-destination.js';
import { answerClientError, installHttpContract, sendError } from './platform/http-contract.js';
import { installOpenApi } from './platform/openapi.js';
import { requestIdFor } from './platform/request-id.js';
import { lazyChildLogger } from './platform/request-logger.js';
import { installValidation } from './platform/validation.js';
import { BODY_LIMIT } from './platform/request-limits.js';
import { UNMATCHED_ROUTE } from './platform/metrics.js';
import { auditCapability, auditRoutes, auditSchemas } from './areas/audit/routes.js';
import { keyRoutes, keySchemas, keysCapability } from './areas/keys/routes.js';
import { systemRoutes, systemSchemas } from './areas/system/routes.js';
import { usageCapability, usageRoutes, usageSchemas } from './areas/usage/routes.js';
import { eventRoutes, eventSchemas, eventsCapability } from './areas/events/routes.js';
import { homeAssistantCapability, integrationRoutes, integrationSchemas } from './areas/integrations/routes.js';
import { resourceRoutes, resourceSchemas, resourcesCapability } from './areas/resources/routes.js';
import { webhookRoutes, webhookSchemas, webhooksCapability } from './areas/webhooks/routes.js';
import { appRoutes, appSchemas, appsCapability } from './areas/apps/routes.js';
import { oauthCapability, oauthRoutes, oauthSchemas } from './areas/oauth/routes.js';
import { developerCapability, developerRoutes, developerSchemas, developerSecuritySchemes } from './areas/developer/routes.js';
import { scheduleRoutes, scheduleSchemas, schedulesCapability } from './areas/schedules/routes.js';
import { installationRoutes, installationSchemas, installationsCapability } from './areas/installations/routes.js';
import { consoleRoutes } from './areas/console/routes.js';
import { consoleDirectory } from './paths.js';
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
}

/** The service's own logger: JSON lines on standard output, batched per turn of the event loop. */
function serviceLogger(config: Config, destination: BatchedLogDestination): FastifyBaseLogger {
  return pino(
    {
      level: config.logLevel,
      // Secrets travel in these headers; nothing that logs a request may print them.
      redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie', 'res.headers["set-cookie"]'], censor: '[redacted]' },
    },
    destination,
  );
}

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const context = options.context ?? (await openContext(config, options));
  const ownsContext = options.context === undefined;
  const { services } = context;

  const destination = options.logger === undefined ? new BatchedLogDestination() : undefined;
  const app = Fastify({
    ...(destination ? { loggerInstance: serviceLogger(config, destination) } : { logger: options.logger }),
    genReqId: requestIdFor,
    childLoggerFactory: lazyChildLogger,
    requestIdHeader: false,
    // One log line per request, written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    trustProxy: config.trustProxy,
    bodyLimit: BODY_LIMIT,
    return503OnClosing: true,
    clientErrorHandler: answerClientError,
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      sendError(request, reply, { status: 400, code: 'invalid_request', message: error.message });
    },
  });
  app.decorate('context', context);

  installValidation(app);
  installHttpContract(app);
  installAccess(app, { config, resolvers: [services.keys, services.oauth], limiter: context.rateLimiter });

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
      'request completed',
    );
    done();
  });

  await installOpenApi(
    app,
    config,
    [
      ...systemSchemas,
      ...keySchemas,
      ...auditSchemas,
      ...usageSchemas,
      ...resourceSchemas,
      ...eventSchemas,
      ...integrationSchemas,
      ...webhookSchemas,
      ...appSchemas,
      ...oauthSchemas,
      ...developerSchemas,
      ...scheduleSchemas,
      ...installationSchemas,
    ],
    { securitySchemes: developerSecuritySchemes },
  );

  // Each area's line of GET /api/v1/capabilities, from the constants its own rules use.
  const capabilities = [
    keysCapability(),
    auditCapability(),
    usageCapability(),
    resourcesCapability(),
    eventsCapability(config),
    homeAssistantCapability(),
    webhooksCapability(config),
    oauthCapability(config),
    appsCapability(),
    installationsCapability(),
    schedulesCapability(),
    developerCapability(config),
  ];
  await app.register(systemRoutes, { config, system: services.system, capabilities });
  await app.register(keyRoutes, { keys: services.keys });
  await app.register(auditRoutes, { audit: services.audit });
  await app.register(usageRoutes, { usage: services.usage });
  await app.register(resourceRoutes, { resources: services.resources, reads: services.resourceReads });
  await app.register(eventRoutes, { events: services.events, reads: services.eventReads, streams: context.streams });
  await app.register(integrationRoutes, { resources: services.resourceReads, clock: context.clock, installationId: () => null });
  await app.register(webhookRoutes, { webhooks: services.webhooks });
  await app.register(appRoutes, { apps: services.apps });
  await app.register(oauthRoutes, { oauth: services.oauth });
  await app.register(developerRoutes, { developer: services.developer, sessionTtlSeconds: config.developerSessionTtlSeconds });
  await app.register(scheduleRoutes, { schedules: services.schedules });
  await app.register(installationRoutes, { installations: services.installations });
  await app.register(consoleRoutes, { directory: consoleDirectory() });

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
