// `devdata serve`: the HTTP server until SIGTERM or SIGINT. Its start lines are JSON log lines, or on
// a terminal (LOG_FORMAT) a banner for people followed by log lines for people.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildApp, listen } from '../app.js';
import { CONSOLE_PATH } from '../areas/console/routes.js';
import type { Config } from '../config.js';
import type { AppContext } from '../context.js';
import { consoleDirectory, packageVersion } from '../paths.js';
import { BatchedLogDestination } from '../platform/log-destination.js';
import { chooseLogOutput } from '../platform/log-format.js';
import { startBanner } from './start-banner.js';

/** Says where the key of the webhook signing secrets is, once at start (never the key itself). */
function logSecrets(log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void }, context: AppContext): void {
  const status = context.secrets;
  if (!status) return;
  const file = status.file;
  if (status.warning) log.warn({ secretsKeyFile: file }, status.warning);
  if (status.finishedRotation) log.warn({ secretsKeyFile: file }, `finished a key rotation that was interrupted: ${file}.new replaced ${file}`);
  if (status.source === 'environment') log.info({ secretsKey: 'SECRETS_KEY' }, 'webhook signing secrets are sealed with SECRETS_KEY');
  else if (status.source === 'memory')
    log.info({ secretsKey: 'memory' }, 'in-memory database: webhook signing secrets are sealed with a key of this process alone');
  else if (status.created) {
    log.info(
      { secretsKeyFile: file },
      `made the secrets key file ${file} (mode 0600): webhook signing secrets are sealed with it. Keep a copy apart from your backups, which never contain it`,
    );
  } else log.info({ secretsKeyFile: file }, `webhook signing secrets are sealed with the key in ${file}`);
  if (status.source === 'file' && context.storage.backend === 'postgres') {
    log.warn({ secretsKeyFile: file }, `on PostgreSQL every process needs the same key: set SECRETS_KEY, or give every process a copy of ${file}`);
  }
  if (status.sealedNow > 0)
    log.info({ sealed: status.sealedNow }, `sealed ${status.sealedNow} webhook signing secret(s) an older release stored in plain text`);
}

export async function serve(config: Config): Promise<void> {
  const output = chooseLogOutput(config.logFormat, process.stdout, process.env);
  const destination = new BatchedLogDestination();
  const app = await buildApp(config, { log: { destination, output } });
  if (config.webhookAllowPrivateTargets) {
    app.log.warn('WEBHOOK_ALLOW_PRIVATE_TARGETS is on: webhooks may reach loopback and private addresses. Development only.');
  }
  logSecrets(app.log, app.context);
  const { migrationsApplied } = app.context;
  if (migrationsApplied.length > 0) app.log.info({ migrations: migrationsApplied }, `applied ${migrationsApplied.length} database migration(s)`);
  let closing = false;
  let closeMetrics: (() => Promise<void>) | undefined;
  const shutdown = (signal: string) => {
    if (closing) {
      app.log.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    app.close().then(
      async () => {
        await closeMetrics?.();
        process.exit(0);
      },
      (error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  const address = await listen(app, config, { port: config.port, host: config.host });
  const pretty = output.format === 'pretty';
  // The banner says what these lines say.
  if (!pretty) app.log.info({ address, port: (app.server.address() as { port: number }).port, baseUrl: config.baseUrl }, `devdata listening on ${address}`);
  let metricsUrl: string | undefined;
  const { metrics } = app.context;
  if (metrics && config.metrics) {
    const { listenMetrics } = await import('../platform/metrics-server.js');
    const listener = await listenMetrics(metrics, config.metrics.host, config.metrics.port);
    closeMetrics = () => listener.close();
    metricsUrl = listener.url;
    if (!pretty) app.log.info({ metricsUrl: listener.url, metricsPort: listener.port }, `metrics on ${listener.url}`);
  }
  if (pretty) {
    // Through the log destination, so it comes after the start's log lines and before the requests'.
    destination.write(
      startBanner({
        version: packageVersion(),
        address,
        baseUrl: config.baseUrl,
        baseUrlExplicit: config.baseUrlExplicit,
        consoleUrl: `${config.baseUrl}${CONSOLE_PATH}`,
        consoleBuilt: existsSync(join(consoleDirectory(), 'index.html')),
        databaseUrl: config.databaseUrl,
        metricsUrl,
        color: output.color,
      }),
    );
  }
}
