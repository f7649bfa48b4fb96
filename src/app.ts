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
import { UNMATCHED_ROUTE } from './platform/metrics.js';
import { auditRoutes, auditSchemas } from './areas/audit/routes.js';
import { AUDIT_TYPES } from './areas/audit/service.js';
import { keyRoutes, keySchemas } from './areas/keys/routes.js';
import { systemRoutes, systemSchemas, type Feature } from './areas/system/routes.js';
import { usageRoutes, usageSchemas } from './areas/usage/routes.js';
import { eventRoutes, eventSchemas } from './areas/events/routes.js';
import { EVENT_TYPES } from './areas/events/service.js';
import { integrationRoutes, integrationSchemas } from './areas/integrations/routes.js';
import { resourceRoutes, resourceSchemas } from './areas/resources/routes.js';
import { webhookRoutes, webhookSchemas } from './areas/webhooks/routes.js';
import { MAX_ATTEMPTS, MAX_WEBHOOKS_PER_ACCOUNT, QUEUE_CAP, HISTORY_KEPT } from './areas/webhooks/service.js';
import { appRoutes, appSchemas } from './areas/apps/routes.js';
import { oauthRoutes, oauthSchemas } from './areas/oauth/routes.js';
import { developerRoutes, developerSchemas } from './areas/developer/routes.js';
import { SIGNUP_ATTEMPTS_PER_HOUR } from './areas/developer/service.js';
import { scheduleRoutes, scheduleSchemas } from './areas/schedules/routes.js';
import { MISSED_RUN_GRACE_MS, SCHEDULER_INTERVAL_MS } from './areas/schedules/service.js';
import { installationRoutes, installationSchemas } from './areas/installations/routes.js';
import { consoleRoutes } from './areas/console/routes.js';
import { consoleDirectory } from './paths.js';
import { startBackgroundWork } from './workers/background.js';

export const BODY_LIMIT = 1024 * 1024;

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
    if (metrics) metrics.request(request.method, request.is404 ? UNMATCHED_ROUTE : (request.routeOptions.url ?? UNMATCHED_ROUTE), status, reply.elapsedTime / 1000);
    // Through the root logger with the id, the same line request.log would write, without making it.
    app.log.info(
      { requestId: request.id, method: request.method, url: request.url, statusCode: status, responseTimeMs: Math.round(reply.elapsedTime * 10) / 10 },
      'request completed',
    );
    done();
  });

  await installOpenApi(app, config, [
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
  ]);

  const features: Feature[] = [
    { name: 'keys', description: 'API keys with scopes and expiry', maxExpiresInDays: 365 },
    { name: 'audit', description: 'Audit history of account changes', types: [...AUDIT_TYPES] },
    { name: 'usage', description: 'Daily request and error counts per account', maxDays: 90 },
    { name: 'resources', description: 'Named data values with optimistic concurrency', types: ['sensor', 'binary_sensor', 'switch', 'text'], maxListLimit: 500 },
    {
      name: 'events',
      description: 'Per-account event log: cursor polling, custom events, Server-Sent Events stream',
      retention: config.eventRetention,
      maxPageLimit: 1000,
      streamLimitPerAccount: config.streamLimitPerAccount,
      streamHeartbeatSeconds: 15,
    },
    { name: 'homeAssistant', description: 'Resource snapshots with an event cursor for Home Assistant' },
    {
      name: 'webhooks',
      description: 'Signed event delivery to HTTPS receivers, at least once',
      maxPerAccount: MAX_WEBHOOKS_PER_ACCOUNT,
      queueCap: QUEUE_CAP,
      historyKept: HISTORY_KEPT,
      maxAttempts: MAX_ATTEMPTS,
      retryScheduleSeconds: config.webhookRetrySchedule,
      timeoutSeconds: config.webhookTimeoutMs / 1000,
      signatureHeader: 'X-Service-Signature',
    },
    {
      name: 'oauth',
      description: 'OAuth 2.0 authorization server: authorization code with PKCE (S256), refresh tokens, client credentials',
      metadata: '/.well-known/oauth-authorization-server',
      accessTokenTtlSeconds: config.accessTokenTtlSeconds,
      connectionDays: 30,
      codeTtlSeconds: 300,
    },
    { name: 'apps', description: 'Registered applications, public and confidential', maxRedirectUris: 10 },
    { name: 'installations', description: 'Downloadable files built from the repository (the OpenAPI document)', rangeRequests: true },
    {
      name: 'schedules',
      description: 'Cron (5 fields, IANA time zones) or one-shot schedules that set a state or publish an event',
      actions: ['set_state', 'publish_event'],
      cronFields: 5,
      checkIntervalSeconds: SCHEDULER_INTERVAL_MS / 1000,
      missedRunGraceMinutes: MISSED_RUN_GRACE_MS / 60_000,
    },
    {
      name: 'developer',
      description: 'Developer signup with a session cookie (no API key: the operator issues the first one)',
      signupAttemptsPerIpPerHour: SIGNUP_ATTEMPTS_PER_HOUR,
      sessionHours: config.developerSessionTtlSeconds / 3600,
    },
  ];
  await app.register(systemRoutes, { config, system: services.system, features, eventTypes: [...EVENT_TYPES] });
  await app.register(keyRoutes, { keys: services.keys });
  await app.register(auditRoutes, { audit: services.audit });
  await app.register(usageRoutes, { usage: services.usage });
  await app.register(resourceRoutes, { resources: services.resources });
  await app.register(eventRoutes, { events: services.events, streams: context.streams });
  await app.register(integrationRoutes, { resources: services.resources, clock: context.clock, installationId: () => null });
  await app.register(webhookRoutes, { webhooks: services.webhooks });
  await app.register(appRoutes, { apps: services.apps, endConnections: (exec, registered) => services.oauth.endAppGrants(exec, registered) });
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
