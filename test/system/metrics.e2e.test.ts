// The operator's metrics end to end (docs/operating.md, "Metrics"): the built server as a child
// process with METRICS_PORT set, real traffic through its public port, then its metrics port
// scraped and parsed with a Prometheus text-format parser (parse-prometheus-text-format).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat, { type MetricFamily, type Sample } from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, killAll, ROOT, run, ServerProcess } from '../support/processes.js';
import { until } from '../support/wait.js';

let workDir: string;
let receiver: Server;
let receiverUrl: string;

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'devdata-metrics-'));
  // A webhook receiver on loopback: 200 on /ok, 500 on anything else.
  receiver = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(request.url === '/ok' ? 200 : 500).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await killAll();
  receiver?.close();
  rmSync(workDir, { recursive: true, force: true });
});

/**
 * The exposition read by the parser twice: as served (every line must parse; families with their
 * help, type and samples), and with the histograms' TYPE lines left out, so that each `_bucket`,
 * `_count` and `_sum` series comes back with all its labels (the parser folds a histogram's
 * label sets into one, keeping only `le`).
 */
interface Scrape {
  families: MetricFamily[];
  series: MetricFamily[];
  contentType: string | null;
}

function parseExposition(text: string, contentType: string | null): Scrape {
  const families = parsePrometheusTextFormat(text);
  const histograms = new Set(families.filter((entry) => entry.type === 'HISTOGRAM').map((entry) => entry.name));
  const untyped = text
    .split('\n')
    .filter((line) => !(line.startsWith('# TYPE ') && histograms.has(line.split(' ')[2]!)))
    .join('\n');
  return { families, series: parsePrometheusTextFormat(untyped), contentType };
}

/** One label set of a histogram: its count, sum and cumulative buckets in ascending order. */
function histogram(scrape: Scrape, name: string, labels: Record<string, string> = {}): { count: number; sum: number; buckets: Array<[number, number]> } {
  expect(family(scrape.families, name).type).toBe('HISTOGRAM');
  const matches = (metric: Sample) => Object.entries(labels).every(([key, wanted]) => metric.labels?.[key] === wanted);
  // The series of one label set after another: each name comes back as several families.
  const samples = (suffix: string) =>
    scrape.series
      .filter((entry) => entry.name === `${name}${suffix}`)
      .flatMap((entry) => entry.metrics)
      .filter(matches);
  const buckets = samples('_bucket')
    .map((metric) => [metric.labels!.le === '+Inf' ? Infinity : Number(metric.labels!.le), Number(metric.value)] as [number, number])
    .sort((a, b) => a[0] - b[0]);
  return {
    count: samples('_count').reduce((total, metric) => total + Number(metric.value), 0),
    sum: samples('_sum').reduce((total, metric) => total + Number(metric.value), 0),
    buckets,
  };
}

function family(families: MetricFamily[], name: string): MetricFamily {
  const found = families.find((candidate) => candidate.name === name);
  expect(found, `metric ${name}`).toBeDefined();
  return found!;
}

function sample(families: MetricFamily[], name: string, labels: Record<string, string> = {}): Sample | undefined {
  return family(families, name).metrics.find((metric) => Object.entries(labels).every(([key, value]) => metric.labels?.[key] === value));
}

function value(families: MetricFamily[], name: string, labels: Record<string, string> = {}): number {
  const found = sample(families, name, labels);
  return found?.value === undefined ? 0 : Number(found.value);
}

describe('metrics on a port of their own', () => {
  let server: ServerProcess;
  let baseUrl: string;
  let metricsUrl: string;
  let key: string;
  const env = () =>
    cleanEnv({
      DATABASE_URL: `sqlite:${join(workDir, 'data', 'devdata.db')}`,
      PORT: '0',
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      RATE_LIMIT_ANON_PER_MINUTE: '3',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '0,60,60,60,60',
      WEBHOOK_TIMEOUT_MS: '2000',
    });
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${baseUrl}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
    });
  const scrape = async (): Promise<Scrape> => {
    const response = await fetch(metricsUrl);
    expect(response.status).toBe(200);
    return parseExposition(await response.text(), response.headers.get('content-type'));
  };

  beforeAll(async () => {
    mkdirSync(join(workDir, 'data'));
    const created = await run(process.execPath, [CLI, 'accounts', 'create', '--name', 'Watched', '--json'], { env: env(), cwd: workDir });
    expect(created.code, created.stderr).toBe(0);
    key = JSON.parse(created.stdout).apiKey.key;
    server = new ServerProcess(env(), workDir);
    baseUrl = await server.listening();
    const line = await server.waitForLog((entry) => typeof entry.metricsUrl === 'string', 'the metrics log line');
    metricsUrl = String(line.metricsUrl);
  });

  afterAll(() => {
    if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
  });

  it('listens on loopback by default, on a port other than the public one, which does not serve them', async () => {
    const url = new URL(metricsUrl);
    expect(url.hostname).toBe('127.0.0.1');
    expect(url.pathname).toBe('/metrics');
    expect(url.port).not.toBe(new URL(baseUrl).port);
    const publicMetrics = await fetch(`${baseUrl}/metrics`);
    expect(publicMetrics.status).toBe(404);
    await publicMetrics.arrayBuffer();
    const elsewhere = await fetch(new URL('/other', metricsUrl));
    expect(elsewhere.status).toBe(404);
    await elsewhere.arrayBuffer();
  });

  it('counts requests and their latency by route pattern, method and status, never by URL', async () => {
    const made: string[] = [];
    for (const name of ['a', 'b']) {
      const response = await api('/api/v1/resources', { method: 'POST', body: JSON.stringify({ name, type: 'sensor', state: 1 }) });
      expect(response.status).toBe(201);
      made.push(((await response.json()) as { id: string }).id);
    }
    for (const id of [...made, ...made]) expect((await api(`/api/v1/resources/${id}`)).status).toBe(200);
    expect((await api('/api/v1/resources/res_nothere')).status).toBe(404);
    expect((await fetch(`${baseUrl}/no/such/route/${made[0]}`)).status).toBe(404);

    const scraped = await scrape();
    const { families, contentType } = scraped;
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(family(families, 'devdata_http_requests_total').type).toBe('COUNTER');
    expect(value(families, 'devdata_http_requests_total', { method: 'GET', route: '/api/v1/resources/:id', status: '200' })).toBe(4);
    expect(value(families, 'devdata_http_requests_total', { method: 'GET', route: '/api/v1/resources/:id', status: '404' })).toBe(1);
    expect(value(families, 'devdata_http_requests_total', { method: 'POST', route: '/api/v1/resources', status: '201' })).toBe(2);
    expect(value(families, 'devdata_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);

    const gets = histogram(scraped, 'devdata_http_request_duration_seconds', { method: 'GET', route: '/api/v1/resources/:id', status: '200' });
    expect(gets.count).toBe(4);
    expect(gets.sum).toBeGreaterThan(0);
    expect(gets.buckets.at(-1)).toEqual([Infinity, 4]);
    for (let i = 1; i < gets.buckets.length; i++) expect(gets.buckets[i]![1]).toBeGreaterThanOrEqual(gets.buckets[i - 1]![1]);
    expect(histogram(scraped, 'devdata_http_request_duration_seconds', { method: 'POST', route: '/api/v1/resources', status: '201' }).count).toBe(2);

    // No label anywhere holds an id from a URL.
    for (const metric of scraped.series.flatMap((entry) => entry.metrics)) {
      for (const label of Object.values(metric.labels ?? {})) for (const id of made) expect(label).not.toContain(id);
    }
  });

  it('counts events committed by type, and shows open streams', async () => {
    const scraped = (await scrape()).families;
    const before = value(scraped, 'devdata_events_committed_total', { type: 'custom' });
    // SQLite: every write takes a transaction (one statement is PostgreSQL's).
    const writesBefore = value(scraped, 'devdata_account_writes_total', { path: 'transaction' });
    for (let i = 0; i < 3; i++)
      expect((await api('/api/v1/events', { method: 'POST', body: JSON.stringify({ type: 'custom.tick', data: { i } }) })).status).toBe(201);
    const stream = new AbortController();
    const response = await fetch(`${baseUrl}/api/v1/events/stream`, { headers: { authorization: `Bearer ${key}` }, signal: stream.signal });
    expect(response.status).toBe(200);
    try {
      const { families } = await scrape();
      expect(value(families, 'devdata_events_committed_total', { type: 'custom' })).toBe(before + 3);
      expect(value(families, 'devdata_account_writes_total', { path: 'transaction' })).toBe(writesBefore + 3);
      expect(value(families, 'devdata_account_writes_total', { path: 'one_statement' })).toBe(0);
      expect(value(families, 'devdata_events_committed_total', { type: 'resource.created' })).toBeGreaterThanOrEqual(2);
      expect(family(families, 'devdata_event_streams_open').type).toBe('GAUGE');
      expect(value(families, 'devdata_event_streams_open')).toBe(1);
    } finally {
      stream.abort();
    }
    await until(async () => value((await scrape()).families, 'devdata_event_streams_open') === 0, 'the stream to close', 15_000, 200);
  });

  it('counts rate-limit refusals by limit', async () => {
    // RATE_LIMIT_ANON_PER_MINUTE is 3: the fourth and fifth anonymous request in the minute are refused.
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await fetch(`${baseUrl}/api/v1/auth/me`);
      statuses.push(response.status);
      await response.arrayBuffer();
    }
    const refused = statuses.filter((status) => status === 429).length;
    expect(refused).toBeGreaterThanOrEqual(2);
    expect(value((await scrape()).families, 'devdata_rate_limit_refusals_total', { limit: 'ip' })).toBe(refused);
  });

  it('counts webhook deliveries by outcome, and the queue of those waiting', async () => {
    for (const [name, path] of [
      ['ok', '/ok'],
      ['failing', '/fail'],
    ] as const) {
      const response = await api('/api/v1/webhooks', { method: 'POST', body: JSON.stringify({ name, url: `${receiverUrl}${path}`, events: ['custom.*'] }) });
      expect(response.status).toBe(201);
      await response.arrayBuffer();
    }
    expect((await api('/api/v1/events', { method: 'POST', body: JSON.stringify({ type: 'custom.deliver', data: {} }) })).status).toBe(201);
    await until(
      async () => {
        const { families } = await scrape();
        return (
          value(families, 'devdata_webhook_deliveries_total', { outcome: 'succeeded' }) === 1 &&
          value(families, 'devdata_webhook_deliveries_total', { outcome: 'retrying' }) === 1
        );
      },
      'one delivery to succeed and one to fail and wait for its retry',
      15_000,
      200,
    );
    const scraped = await scrape();
    // The failed one waits 60 s for its second attempt.
    expect(value(scraped.families, 'devdata_webhook_queue_depth')).toBe(1);
    expect(histogram(scraped, 'devdata_webhook_attempt_duration_seconds').count).toBe(2);
  });

  it('counts schedule runs by outcome', async () => {
    const at = new Date(Date.now() + 1500).toISOString();
    const response = await api('/api/v1/schedules', {
      method: 'POST',
      body: JSON.stringify({ name: 'once', at, action: { type: 'publish_event', eventType: 'custom.scheduled', data: {} } }),
    });
    expect(response.status, await response.text()).toBe(201);
    await until(async () => value((await scrape()).families, 'devdata_schedule_runs_total', { outcome: 'succeeded' }) === 1, 'the scheduled run', 15_000, 200);
  });

  it('the Grafana dashboard in docs/ queries only metrics the server exposes', async () => {
    const dashboard = JSON.parse(readFileSync(join(ROOT, 'docs', 'grafana-dashboard.json'), 'utf8')) as {
      panels: Array<{ targets?: Array<{ expr: string }> }>;
    };
    const expressions = dashboard.panels.flatMap((panel) => panel.targets ?? []).map((target) => target.expr);
    expect(expressions.length).toBeGreaterThan(15);
    const { families } = await scrape();
    const exposed = new Set(families.map((entry) => entry.name));
    const used = new Set(
      expressions.flatMap((expr) =>
        [...expr.matchAll(/\b(?:devdata|process|nodejs)_[a-z0-9_]+/g)].map((match) => match[0].replace(/_(bucket|sum|count)$/, '')),
      ),
    );
    expect(used.size).toBeGreaterThan(12);
    for (const name of used) expect(exposed, name).toContain(name);
    // Every devdata metric has a panel.
    for (const name of exposed) if (name.startsWith('devdata_')) expect(used, name).toContain(name);
  });

  it('reports storage connection waits, transaction times and connections, and the process', async () => {
    const scraped = await scrape();
    const { families } = scraped;
    expect(histogram(scraped, 'devdata_storage_connection_wait_seconds').count).toBeGreaterThan(0);
    expect(histogram(scraped, 'devdata_storage_transaction_duration_seconds', { outcome: 'commit' }).count).toBeGreaterThan(5);
    const connections = family(families, 'devdata_storage_connections');
    expect(connections.metrics.map((metric) => metric.labels?.state).sort()).toEqual(['busy', 'idle', 'waiting']);
    expect(value(families, 'devdata_storage_connections', { state: 'idle' }) + value(families, 'devdata_storage_connections', { state: 'busy' })).toBe(1);
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      expect(value(families, name), name).toBeGreaterThan(0);
    }
  });
});

describe('metrics settings', () => {
  const start = (extra: Record<string, string>) =>
    run(process.execPath, [CLI, 'serve'], { env: cleanEnv({ DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'info', ...extra }), cwd: workDir });

  it('refuses the public port, and a host without a port', async () => {
    const same = await start({ PORT: '8765', METRICS_PORT: '8765' });
    expect(same.code).toBe(2);
    expect(same.stderr).toContain('METRICS_PORT must differ from PORT (8765)');
    const hostOnly = await start({ PORT: '0', METRICS_HOST: '127.0.0.1' });
    expect(hostOnly.code).toBe(2);
    expect(hostOnly.stderr).toContain('METRICS_HOST is set but METRICS_PORT is not');
  });

  it('are off when METRICS_PORT is not set', async () => {
    const server = new ServerProcess(cleanEnv({ DATABASE_URL: 'sqlite::memory:', PORT: '0', LOG_LEVEL: 'info' }), workDir);
    await server.listening();
    expect(server.logLines().some((entry) => entry.metricsUrl !== undefined)).toBe(false);
    server.child.kill('SIGTERM');
    expect(await server.exitWithin()).toEqual({ code: 0, signal: null });
  });
});
