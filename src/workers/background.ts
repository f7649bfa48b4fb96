// The service's background work, apart from HTTP: the webhook dispatcher, woken by commits that
// queue deliveries, and the periodic tasks (buffered counters, pruning of the accounts just written,
// retention over all of them and housekeeping, due schedules). The server starts it with the app
// and stops it before the context closes.
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../context.js';
import { SCHEDULER_INTERVAL_MS } from '../areas/schedules/service.js';
import { PeriodicTask } from './periodic-task.js';
import type { HousekeepingReport } from '../areas/history/housekeeping.js';
import { STAGED_MOVE_INTERVAL_MS } from '../areas/history/staged.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';

export interface BackgroundWork {
  /** Stops every loop; a task in progress finishes its current step, buffered counters are written. */
  stop(): Promise<void>;
}

export function startBackgroundWork(context: AppContext, log: FastifyBaseLogger): BackgroundWork {
  const { config, services, metrics, writes } = context;

  const dispatcher = new WebhookDispatcher(services.webhooks.attempts, log, { concurrency: 64, pollIntervalMs: 500 });
  const stopWaking = writes.afterCommit(() => {
    if (services.webhooks.takeQueuedFlag()) dispatcher.wake();
  });
  services.webhooks.resends.onQueued(() => dispatcher.wake());
  services.system.registerWorker('webhooks', () => dispatcher.report());
  dispatcher.start();

  const flush = new PeriodicTask(
    'flush',
    config.usageFlushIntervalMs,
    async () => {
      await services.usage.flush();
      await services.keys.flushLastUsed();
    },
    log,
  );
  // Accounts written in the last second lose what fell out of their window; `retention` sweeps them all.
  const pruning = new PeriodicTask('pruning', config.pruneIntervalMs, async (signal) => void (await services.events.pruneWritten({ signal })), log);
  const retention = new PeriodicTask(
    'retention',
    config.retentionIntervalMs,
    async (signal) => {
      await services.events.prune({ signal });
      // OAuth connections that ran out first, so what they authorized is cut off as expired, with the audit;
      // then whatever rests on a key that expired.
      await services.oauth.connections.endExpired();
      await services.authority.sweep();
      await services.webhooks.housekeeping();
      // Outcomes of idempotent requests past their 24 hours, a batch per statement.
      await context.idempotentRequests.sweep(signal);
    },
    log,
  );
  // History's aggregates built and expired points removed, a bounded run at a time (areas/history/housekeeping.ts).
  let lastHistoryRun: HousekeepingReport | undefined;
  const history = new PeriodicTask(
    'history',
    config.historyIntervalMs,
    async (signal) => {
      lastHistoryRun = await services.historyHousekeeping.run(signal);
    },
    log,
  );
  // The points live writes staged, moved into their series every second (areas/history/staged.ts).
  const historyStaged = new PeriodicTask('history-staged', STAGED_MOVE_INTERVAL_MS, () => services.historyStaged.settle(), log);
  // Due schedules are looked for every second; a claim in storage makes each run happen once.
  const scheduler = new PeriodicTask(
    'scheduler',
    SCHEDULER_INTERVAL_MS,
    async () => {
      try {
        const runs = await services.schedules.runDue();
        metrics?.scheduleRun('succeeded', runs.filter((run) => run.outcome === 'succeeded').length);
        metrics?.scheduleRun('failed', runs.filter((run) => run.outcome === 'failed').length);
      } catch (error) {
        metrics?.scheduleRun('error', error instanceof AggregateError ? error.errors.length : 1);
        throw error;
      }
    },
    log,
  );
  for (const task of [flush, pruning, retention, history, ...(config.historyEnabled ? [historyStaged] : []), scheduler]) {
    services.system.registerWorker(task.name, () => task.report());
    task.start();
  }
  // What the last run did, and whether it caught up (`done`): an operator sees aggregates lagging.
  services.system.registerWorker('history', () => ({ ...history.report(), lastRun: lastHistoryRun ?? null }));

  return {
    async stop() {
      stopWaking();
      await dispatcher.stop();
      await scheduler.stop({ finalRun: false });
      await pruning.stop({ finalRun: false });
      await retention.stop({ finalRun: false });
      await history.stop({ finalRun: false });
      await historyStaged.stop({ finalRun: false });
      await flush.stop({ finalRun: true });
    },
  };
}
