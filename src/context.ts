// Everything the service is made of apart from HTTP: storage and the area services. The server,
// the CLI and the tests all build the same context.
import type { Config } from './config.js';
import { systemClock, type Clock } from './platform/clock.js';
import { InProcessRateLimitCounter, RateLimiter } from './platform/rate-limit.js';
import { openStorage, type Storage } from './storage/database.js';
import { AccountsService } from './areas/accounts/service.js';
import { AuditService } from './areas/audit/service.js';
import { KeysService } from './areas/keys/service.js';
import { SystemService } from './areas/system/service.js';
import { UsageService } from './areas/usage/service.js';
import { InProcessEventBus, NotifyingEventBus, type EventBus } from './areas/events/bus.js';
import { BatchedRateLimitCounter } from './storage/rate-limit-counter.js';
import { ExternalWrites } from './storage/external-writes.js';
import { EventsService } from './areas/events/service.js';
import { EventReads } from './areas/events/read-side.js';
import { InMemoryRecentEvents } from './areas/events/recent.js';
import { InMemoryOlderEvents } from './areas/events/older.js';
import { AccountQueue } from './account-writes/queue.js';
import { AccountWrites } from './account-writes/pipeline.js';
import { BatchService } from './areas/batch/service.js';
import { HistoryService } from './areas/history/service.js';
import { HistoryHousekeeping } from './areas/history/housekeeping.js';
import { StagedPoints } from './areas/history/staged.js';
import { IdempotentRequests } from './idempotency/service.js';
import { StreamHub } from './areas/events/stream.js';
import { ResourcesService } from './areas/resources/service.js';
import { InMemoryResourceReadModel, SHARED_LATER_CHUNK } from './areas/resources/read-model.js';
import { ResourceReads } from './areas/resources/read-side.js';
import { WebhookSender } from './areas/webhooks/sender.js';
import { authorizerOf, type Authorizer } from './platform/credential.js';
import { WebhooksService } from './areas/webhooks/service.js';
import { AppsService } from './areas/apps/service.js';
import { DeveloperService } from './areas/developer/service.js';
import { SchedulesService } from './areas/schedules/service.js';
import { InstallationsService } from './areas/installations/service.js';
import { installationsDirectory } from './paths.js';
import { OAuthService } from './areas/oauth/service.js';
import { Metrics } from './platform/metrics.js';
import { DomainEvents } from './domain-events.js';
import { StandingAuthority } from './standing-authority.js';
import { SecretBox } from './platform/secret-box.js';
import { openSecrets, type SecretsStatus } from './secrets.js';
import type { Services } from './services.js';
import { AREAS } from './areas/index.js';
import { announceRevocation, InProcessCredentialCache, listenForRevocations, SHARED_CREDENTIAL_TTL_MS } from './platform/credential-cache.js';

export interface AppContext {
  config: Config;
  clock: Clock;
  storage: Storage;
  services: Services;
  rateLimiter: RateLimiter;
  /** The migrations this start applied (none when the database was current). */
  migrationsApplied: string[];
  /** The operator's metrics, when METRICS_PORT is set. */
  metrics: Metrics | undefined;
  /** The event streams open in this process. */
  streams: StreamHub;
  /** Cross-area reactions: background work subscribes here too. */
  domain: DomainEvents;
  /** Every write of an account's events goes through it; background work follows its commits. */
  writes: AccountWrites;
  /** The outcomes of requests sent with an Idempotency-Key, and the keys running in this process. */
  idempotentRequests: IdempotentRequests;
  /** Where the secrets key came from and what the start did with it; undefined when no key was loaded. */
  secrets: SecretsStatus | undefined;
  close(): Promise<void>;
}

export interface ContextOptions {
  clock?: Clock;
  /**
   * False for commands that never read or write a secret (the operator's account and key
   * commands): no key is loaded or made, and anything that would seal or open one throws.
   */
  secrets?: boolean;
  /**
   * False for a short-lived command: SQLite checkpoints its WAL itself, as by default, instead of
   * from a worker thread started for the server (storage/sqlite-checkpointer.ts).
   */
  backgroundCheckpoints?: boolean;
}

/** Opens storage, applies pending migrations and wires the services together. */
export async function openContext(config: Config, options: ContextOptions = {}): Promise<AppContext> {
  const clock = options.clock ?? systemClock;
  const metrics = config.metrics ? new Metrics() : undefined;
  const storage = openStorage(config.databaseUrl, {
    observer: metrics?.storage,
    backgroundCheckpoints: options.backgroundCheckpoints === false ? undefined : {},
  });
  let migrationsApplied: string[];
  let secrets: { box: SecretBox; status: SecretsStatus | undefined };
  try {
    migrationsApplied = await storage.migrate();
    secrets = options.secrets === false ? { box: new SecretBox(undefined), status: undefined } : await openSecrets(storage, config);
  } catch (error) {
    await storage.close();
    throw error;
  }
  const { db } = storage;
  const audit = new AuditService(db, clock);
  const usage = new UsageService(db, clock);
  // One process (SQLite) keeps shared state in memory; several (PostgreSQL) share it through storage.
  let bus: EventBus = new InProcessEventBus();
  if (storage.notifications) {
    const notifying = new NotifyingEventBus(db, storage.notifications);
    await notifying.start();
    bus = notifying;
  }
  const newCounter = () => (storage.backend === 'postgres' ? new BatchedRateLimitCounter(db) : new InProcessRateLimitCounter());
  const oneProcess = storage.backend === 'sqlite';
  // A SQLite file still notices another process's commits (a second server started by mistake).
  const externalWrites = () => new ExternalWrites(storage.dataVersion!);
  const recentEvents = new InMemoryRecentEvents(
    config.eventRetention,
    oneProcess ? { externalWrites: externalWrites() } : { others: { newestId: (accountId: string): Promise<number> => eventReads.newestId(accountId) } },
  );
  bus.follow(recentEvents);
  // Cross-area reactions (src/domain-events.ts, src/account-writes/pipeline.ts): who reacts to what is wired here and below.
  const domain = new DomainEvents();
  // One SQLite connection commits the writes of a turn together; PostgreSQL's wait at a row lock.
  const writes = new AccountWrites(db, clock, oneProcess ? undefined : new AccountQueue());
  const events = new EventsService(db, config.eventRetention, bus, usage, recentEvents, writes);
  const eventReads = new EventReads(db, config.eventRetention, bus, recentEvents, (load) => new InMemoryOlderEvents(load));
  // Several processes: a cached key lives at most a second, and is forgotten on every process when revoked.
  const credentialCache = new InProcessCredentialCache(oneProcess ? { externalWrites: externalWrites() } : { ttlMs: SHARED_CREDENTIAL_TTL_MS });
  const keys = new KeysService(db, clock, audit, credentialCache, domain);
  const notifications = storage.notifications;
  // Every process hears of an ended credential in its commit: it forgets a cached key, closes streams.
  if (notifications) {
    domain.inside('key.revoked', (exec, key) => announceRevocation(notifications, exec, [key.id]));
    domain.inside('credentials.ended', (exec, { ids }) => announceRevocation(notifications, exec, ids));
  }
  const apps = new AppsService(db, clock, audit, domain);
  const oauth = new OAuthService(db, clock, apps, keys, audit, domain, {
    accessTokenTtlSeconds: config.accessTokenTtlSeconds,
    // Read at each use: with PORT=0 the base URL is known only once the server listens.
    issuer: () => config.baseUrl,
  });
  const liveCredentials = async (authorizers: Authorizer[]): Promise<Set<string>> => {
    const ids = (kind: string) => authorizers.filter((authorizer) => authorizer.kind === kind).map((authorizer) => authorizer.id);
    const [liveKeys, liveConnections, liveApps] = await Promise.all([
      keys.usableIds(ids('api_key')),
      oauth.connections.liveConnectionIds(ids('oauth_connection')),
      oauth.liveClientCredentialApps(ids('oauth_app')),
    ]);
    return new Set([...liveKeys, ...liveConnections, ...liveApps]);
  };
  const sender = new WebhookSender(config.webhookAllowPrivateTargets, config.webhookTimeoutMs);
  // What acts later on an account's behalf stops with the credential that authorized it.
  const authority = new StandingAuthority(db, domain, liveCredentials);
  const webhooks = new WebhooksService(db, clock, audit, authority, usage, secrets.box, sender, eventReads, {
    allowPrivateTargets: config.webhookAllowPrivateTargets,
    retrySchedule: config.webhookRetrySchedule,
    leaseMs: config.webhookLeaseSeconds * 1000,
    disableAfterMs: config.webhookDisableAfterHours * 3_600_000,
  });
  authority.register(webhooks);
  authority.register(oauth.clientCredentialsAuthority);
  const accounts = new AccountsService(db, clock, audit);
  // Several processes: each keeps views too, told of the others' commits by the bus.
  const resourceReads = new ResourceReads(db, eventReads, (load) => {
    if (oneProcess) return new InMemoryResourceReadModel(load, { externalWrites: externalWrites() });
    const model = new InMemoryResourceReadModel(load, {
      laterChunk: SHARED_LATER_CHUNK,
      others: {
        events: (accountId, after, upTo) => eventReads.read(accountId, { after, upTo, limit: upTo - after }),
        newestId: (accountId) => eventReads.newestId(accountId),
      },
    });
    bus.follow(model);
    return model;
  });
  const resources = new ResourcesService(db, clock, writes, resourceReads.views);
  const signupLimiter = new RateLimiter(newCounter(), clock, 3_600_000);
  const rateLimiter = new RateLimiter(newCounter(), clock);
  if (metrics) {
    signupLimiter.onRefused = () => metrics.rateLimitRefused('signup');
    rateLimiter.onRefused = (key) => metrics.rateLimitRefused(key.startsWith('ip:') ? 'ip' : 'credential');
    writes.afterCommit(({ events: appended, path }) => metrics.committed(appended, path));
    webhooks.attempts.onAttempt((outcome, seconds) => metrics.deliveryAttempt(outcome, seconds));
    metrics.gauge('devdata_webhook_queue_depth', 'Webhook deliveries waiting to be made (first attempts and retries)', () => webhooks.queueDepth());
    metrics.labelledGauge('devdata_storage_connections', 'Storage connections by state: idle, busy, and requests waiting for one', 'state', () => {
      const { total, idle, waiting } = storage.connections();
      return { idle, busy: total - idle, waiting };
    });
  }
  const developer = new DeveloperService(db, clock, accounts, audit, signupLimiter, {
    capacity: config.signupCapacity,
    sessionTtlSeconds: config.developerSessionTtlSeconds,
  });
  // A stream lives as long as its credential: checked at every heartbeat, and at once on a revocation here.
  const streams = new StreamHub(eventReads, config.streamLimitPerAccount, async (credentials) => {
    const now = clock.now().toISOString();
    const live = await liveCredentials(credentials.map(authorizerOf));
    return new Set(credentials.filter((credential) => credential.expiresAt > now && live.has(authorizerOf(credential).id)).map((credential) => credential.id));
  });
  metrics?.gauge('devdata_event_streams_open', 'Server-Sent Events streams open in this process', () => streams.size);
  if (notifications) {
    await listenForRevocations(notifications, credentialCache, (ids) => {
      for (const id of ids) streams.closeFor(id);
    });
  }
  const historyOptions = { enabled: config.historyEnabled, retentionDays: config.historyRetentionDays, rollupDays: config.historyRollupDays };
  const schedules = new SchedulesService(db, clock, audit, writes, resources, authority);
  authority.register(schedules);
  const historyStaged = new StagedPoints(db);
  const services: Services = {
    audit,
    accounts,
    developer,
    keys,
    usage,
    system: new SystemService(storage, clock),
    events,
    eventReads,
    resources,
    resourceReads,
    batches: new BatchService(writes, resources, events),
    history: new HistoryService(db, clock, writes, resources, historyStaged, historyOptions),
    historyHousekeeping: new HistoryHousekeeping(db, clock, historyOptions, historyStaged),
    historyStaged,
    schedules,
    installations: new InstallationsService(installationsDirectory()),
    webhooks,
    apps,
    oauth,
    liveCredentials,
    authority,
  };
  // Each area's reactions to the others' changes (areas/index.ts).
  for (const area of AREAS) area.registerReactions?.({ domain, writes, services, streams });
  const { checkpointer } = storage;
  if (checkpointer) services.system.registerWorker('checkpoints', () => checkpointer.report());
  return {
    config,
    clock,
    storage,
    services,
    rateLimiter,
    metrics,
    streams,
    domain,
    writes,
    idempotentRequests: new IdempotentRequests(db, clock, secrets.box),
    migrationsApplied,
    secrets: secrets.status,
    async close() {
      streams.closeAll();
      await sender.close();
      await bus.close();
      await storage.close();
    },
  };
}
