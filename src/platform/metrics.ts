// The operator's metrics in the Prometheus text format (prom-client), served on a listen address
// of their own (METRICS_HOST/METRICS_PORT, see metrics-server.ts), never on the public port. Made
// only when METRICS_PORT is set: otherwise nothing here runs on any request.
//
// On the request path: a response is counted in plain numbers of a series kept by (route pattern,
// method, status), three map lookups and a few additions, with no allocation; prom-client reads them
// only when scraped (PlainSeries below). prom-client's own children hash their label values on
// every observation; they stay for what is counted less often than per request.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { StorageObserver } from '../storage/observed-dialect.js';

/** Request latency buckets, seconds: 1 ms to 10 s. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Storage buckets, seconds: 50 µs to 5 s. */
const STORAGE_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5];

/** The route label of a request that matched no route: its URL would make a series per URL. */
export const UNMATCHED_ROUTE = 'unmatched';

/** Counts of one histogram series in plain numbers: its count, the sum of its values and its bucket counts (not cumulative; the last is +Inf). */
class PlainSeries {
  count = 0;
  sum = 0;
  readonly buckets: Float64Array;

  constructor(
    readonly labels: Record<string, string>,
    private readonly bounds: readonly number[],
  ) {
    this.buckets = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    this.count++;
    this.sum += value;
    let index = 0;
    while (index < this.bounds.length && value > this.bounds[index]!) index++;
    this.buckets[index]!++;
  }

  /** The series as prom-client's histogram values: cumulative buckets, then sum and count. */
  histogramValues(name: string): MetricValue[] {
    let cumulative = 0;
    const values = [...this.bounds, Infinity].map((bound, index): MetricValue => {
      cumulative += this.buckets[index]!;
      return { metricName: `${name}_bucket`, labels: { ...this.labels, le: bound === Infinity ? '+Inf' : String(bound) }, value: cumulative };
    });
    values.push({ metricName: `${name}_sum`, labels: this.labels, value: this.sum });
    values.push({ metricName: `${name}_count`, labels: this.labels, value: this.count });
    return values;
  }
}

type MetricValue = { labels: Record<string, string>; value: number; metricName?: string };

/**
 * A histogram kept in plain series and read by prom-client only when scraped: registered as a
 * metric of its own (prom-client takes any object with get()). What prom-client's Histogram does on
 * each observe (hash the label values, look the series up) is left out of the hot path.
 */
function registerPlainHistogram(registry: Registry, name: string, help: string, series: () => readonly PlainSeries[]): void {
  const histogram = {
    name,
    help,
    type: 'histogram',
    get: async () => ({ ...histogram, values: series().flatMap((one) => one.histogramValues(name)) }),
  };
  registry.registerMetric(histogram as unknown as Histogram);
}

/** Requests by (method, route, status), as a counter and a histogram that prom-client reads when scraped. */
class RequestMetrics {
  private readonly series = new Map<string, Map<string, Map<number, PlainSeries>>>();
  private readonly all: PlainSeries[] = [];

  constructor(registry: Registry) {
    const counter = {
      name: 'devdata_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status',
      type: 'counter',
      get: async () => ({ ...counter, values: this.all.map((series): MetricValue => ({ labels: series.labels, value: series.count })) }),
    };
    registry.registerMetric(counter as unknown as Counter);
    registerPlainHistogram(
      registry,
      'devdata_http_request_duration_seconds',
      'Time from the request to the end of its response, by method, route pattern and status',
      () => this.all,
    );
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.series.get(route);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.series.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let series = byStatus.get(status);
    if (series === undefined) {
      series = new PlainSeries({ method, route, status: String(status) }, HTTP_BUCKETS);
      byStatus.set(status, series);
      this.all.push(series);
    }
    series.observe(seconds);
  }
}

export type DeliveryOutcome = 'succeeded' | 'retrying' | 'failed';
export type ScheduleOutcome = 'succeeded' | 'failed' | 'error';
export type RateLimit = 'credential' | 'ip' | 'signup';

export class Metrics {
  readonly registry = new Registry();

  private readonly requests = new RequestMetrics(this.registry);

  private readonly events = new Counter({
    name: 'devdata_events_committed_total',
    help: 'Events committed to the event log, by type (custom.* as custom)',
    labelNames: ['type'],
    registers: [this.registry],
  });
  private readonly eventsByType = new Map<string, Counter.Internal>();
  private readonly accountWrites = new Counter({
    name: 'devdata_account_writes_total',
    help: 'Account writes committed, by path: one_statement (PostgreSQL, no reaction to run inside) or transaction',
    labelNames: ['path'],
    registers: [this.registry],
  });

  private readonly deliveries = new Counter({
    name: 'devdata_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: succeeded, retrying (failed, tried again later) or failed (given up)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  private readonly deliveryDuration = new Histogram({
    name: 'devdata_webhook_attempt_duration_seconds',
    help: 'Duration of one webhook delivery attempt, until the receiver answered or the attempt failed',
    buckets: HTTP_BUCKETS,
    registers: [this.registry],
  });
  private readonly scheduleRuns = new Counter({
    name: 'devdata_schedule_runs_total',
    help: 'Scheduled runs by outcome: succeeded, failed (the action failed) or error (not committed; tried again)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  private readonly refusals = new Counter({
    name: 'devdata_rate_limit_refusals_total',
    help: 'Requests refused by a rate limit: per credential, per client address (anonymous), or signup attempts',
    labelNames: ['limit'],
    registers: [this.registry],
  });
  // Observed on every query and transaction: plain series (see registerPlainHistogram).
  private readonly connectionWait = new PlainSeries({}, STORAGE_BUCKETS);
  private readonly committedTransactions = new PlainSeries({ outcome: 'commit' }, STORAGE_BUCKETS);
  private readonly rolledBackTransactions = new PlainSeries({ outcome: 'rollback' }, STORAGE_BUCKETS);

  /** What the storage layer reports to (openStorage's observer). */
  readonly storage: StorageObserver = {
    connectionWait: (seconds) => this.connectionWait.observe(seconds),
    transaction: (seconds, outcome) => (outcome === 'commit' ? this.committedTransactions : this.rolledBackTransactions).observe(seconds),
  };

  constructor() {
    registerPlainHistogram(
      this.registry,
      'devdata_storage_connection_wait_seconds',
      "Time a query or transaction waited for a storage connection (PostgreSQL's pool, SQLite's one connection)",
      () => [this.connectionWait],
    );
    registerPlainHistogram(
      this.registry,
      'devdata_storage_transaction_duration_seconds',
      'Time from the begin of a storage transaction to its commit (on SQLite: its group commit) or rollback',
      () => [this.committedTransactions, this.rolledBackTransactions],
    );
    // process_* and nodejs_* under their usual names, so existing Node.js dashboards work too.
    collectDefaultMetrics({ register: this.registry });
  }

  /** One answered request; `route` is the route pattern (`/api/v1/resources/:id`), never the URL. */
  request(method: string, route: string, status: number, seconds: number): void {
    this.requests.observe(method, route, status, seconds);
  }

  committed(events: ReadonlyArray<{ type: string }>, path: 'one_statement' | 'transaction'): void {
    this.accountWrites.labels(path).inc();
    for (const { type } of events) {
      const label = type.startsWith('custom.') ? 'custom' : type;
      let counter = this.eventsByType.get(label);
      if (counter === undefined) {
        counter = this.events.labels(label);
        this.eventsByType.set(label, counter);
      }
      counter.inc();
    }
  }

  deliveryAttempt(outcome: DeliveryOutcome, seconds: number): void {
    this.deliveries.labels(outcome).inc();
    this.deliveryDuration.observe(seconds);
  }

  scheduleRun(outcome: ScheduleOutcome, count = 1): void {
    if (count > 0) this.scheduleRuns.labels(outcome).inc(count);
  }

  rateLimitRefused(limit: RateLimit): void {
    this.refusals.labels(limit).inc();
  }

  /** A gauge read when scraped. */
  gauge(name: string, help: string, read: () => number | Promise<number>): void {
    this.readGauge(name, help, undefined, async (gauge) => gauge.set(await read()));
  }

  /** A gauge with one label, read when scraped: every label value with its number. */
  labelledGauge(name: string, help: string, label: string, read: () => Record<string, number> | Promise<Record<string, number>>): void {
    this.readGauge(name, help, label, async (gauge) => {
      for (const [value, count] of Object.entries(await read())) gauge.labels(value).set(count);
    });
  }

  /** Storage trouble while reading leaves the gauge at its last value rather than failing the whole scrape. */
  private readGauge(name: string, help: string, label: string | undefined, update: (gauge: Gauge<string>) => Promise<void>): void {
    new Gauge({
      name,
      help,
      labelNames: label === undefined ? [] : [label],
      registers: [this.registry],
      async collect() {
        await update(this).catch(() => undefined);
      },
    });
  }

  /** The exposition: Prometheus text format, with its content type. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
