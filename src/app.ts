// buildApp(config): the whole HTTP service as a Fastify instance, apart from listening, so the
// server, the CLI and the tests (inject() and real sockets alike) share it.
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Config } from './config.js';
import { openContext, type AppContext, type ContextOptions } from './context.js';
import { installAccess } from './platform/access.js';
import { installCors } from './platform/cors.js';
import { installHttpContract, sendError } from './platform/http-contract.js';
import { installOpenApi } from './platform/openapi.js';
import { requestIdFor } from './platform/request-id.js';
import { installValidation } from './platform/validation.js';
import { auditRoutes, auditSchemas } from './areas/audit/routes.js';
import { AUDIT_TYPES } from './areas/audit/service.js';
import { keyRoutes, keySchemas } from './areas/keys/routes.js';
import { systemRoutes, systemSchemas, type Feature } from './areas/system/routes.js';
import { usageRoutes, usageSchemas } from './areas/usage/routes.js';
import { FlushLoop } from './workers/flush-loop.js';

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

function loggerOptions(config: Config): FastifyServerOptions['logger'] {
  return {
    level: config.logLevel,
    // Secrets travel in these headers; nothing that logs a request may print them.
    redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie', 'res.headers["set-cookie"]'], censor: '[redacted]' },
  };
}

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const context = options.context ?? (await openContext(config, options));
  const ownsContext = options.context === undefined;
  const { services } = context;

  const app = Fastify({
    logger: options.logger ?? loggerOptions(config),
    genReqId: requestIdFor,
    requestIdHeader: false,
    // One log line per request, written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    trustProxy: config.trustProxy,
    bodyLimit: BODY_LIMIT,
    return503OnClosing: true,
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      sendError(request, reply, { status: 400, code: 'invalid_request', message: error.message });
    },
  });
  app.decorate('context', context);

  installValidation(app);
  installHttpContract(app);
  await installCors(app);
  installAccess(app, { config, resolvers: [services.keys], limiter: context.rateLimiter });

  app.addHook('onResponse', async (request, reply) => {
    const status = reply.statusCode;
    if (request.credential) services.usage.count(request.credential.accountId, { requests: 1, errors: status >= 400 ? 1 : 0 });
    request.log.info(
      { method: request.method, url: request.url, statusCode: status, responseTimeMs: Math.round(reply.elapsedTime * 10) / 10 },
      'request completed',
    );
  });

  await installOpenApi(app, config, [...systemSchemas, ...keySchemas, ...auditSchemas, ...usageSchemas]);

  const features: Feature[] = [
    { name: 'keys', description: 'API keys with scopes and expiry', maxExpiresInDays: 365 },
    { name: 'audit', description: 'Audit history of account changes', types: [...AUDIT_TYPES] },
    { name: 'usage', description: 'Daily request and error counts per account', maxDays: 90 },
  ];
  await app.register(systemRoutes, { config, system: services.system, features, eventTypes: [] });
  await app.register(keyRoutes, { keys: services.keys, accounts: services.accounts });
  await app.register(auditRoutes, { audit: services.audit });
  await app.register(usageRoutes, { usage: services.usage });

  const flushLoop = new FlushLoop(config.usageFlushIntervalMs, [() => services.usage.flush(), () => services.keys.flushLastUsed()], app.log);
  services.system.registerWorker('flush', () => flushLoop.report());
  flushLoop.start();
  app.addHook('onClose', async () => {
    await flushLoop.stop();
    if (ownsContext) await context.close();
  });

  return app;
}
