// The benchmark's results: a row of the table, and the table in markdown.

export type RowKind = 'http' | 'stream' | 'webhook' | 'memory' | 'size' | 'soak';

export interface Row {
  key: string;
  label: string;
  kind: RowKind;
  /** HTTP: requests/s; stream: messages delivered/s over all streams; webhook: deliveries/s. */
  requestsPerSecond: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
  /** HTTP: connection errors, timeouts and non-2xx; stream: lost, duplicate, reordered, failed opens/writes; webhook: lost, duplicate, badly signed, failed writes. */
  errors: number;
  /** Memory rows: the server's resident set size. */
  rssMb: number | null;
  /** Size rows: bytes on disk per stored item (a history point). */
  bytesPerPoint?: number | null;
  /** HTTP: req/s ÷ baseline req/s; stream: p99 ÷ floor p99; webhook: deliveries/s ÷ publish rate; memory: RSS ÷ the baseline's RSS. */
  ratio: number | null;
  ratioOf: string;
  target: string | null;
  met: boolean | null;
  /** HTTP rows: the same request against a server on PostgreSQL (the PostgreSQL column). */
  postgres?: PostgresMeasurement;
  detail: Record<string, unknown>;
}

export interface PostgresMeasurement {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** req/s ÷ the baseline's req/s, like the SQLite column's (or the row's own reference); null: none. */
  ratio: number | null;
  serverCpuUsPerRequest: number | null;
  /** A row whose goal is against another row: the same ratio, both rows on PostgreSQL. */
  ratioToRow?: number;
}

export const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

const t0 = Date.now();
export function log(message: string): void {
  process.stderr.write(`bench [${((Date.now() - t0) / 1000).toFixed(1)}s]: ${message}\n`);
}

function formatNumber(value: number | null, digits = 0): string {
  if (value === null || !Number.isFinite(value)) return '—';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** Whole milliseconds, as autocannon and Date.now() record them: 0 means under a millisecond. */
function formatLatency(value: number | null): string {
  if (value === 0) return '<1';
  return formatNumber(value);
}

function formatRatio(row: Row): string {
  if (row.ratio === null) return '—';
  if (row.kind === 'http') return `${Math.round(row.ratio * 100)}%`;
  return `${row.ratio.toFixed(2)}× ${row.ratioOf}`;
}

/** The PostgreSQL column: req/s, p99 and ratio to the baseline of the same request on PostgreSQL. */
function formatPostgres(row: Row): string {
  const pg = row.postgres;
  if (!pg) return '—';
  const errors = pg.errors > 0 ? `, **${pg.errors} errors**` : '';
  const toRow = pg.ratioToRow !== undefined ? `, ${pg.ratioToRow}× its row` : '';
  const ratio = pg.ratio === null ? '' : `, ${Math.round(pg.ratio * 100)}%`;
  return `${formatNumber(pg.requestsPerSecond)} req/s, p99 ${formatLatency(pg.p99Ms)} ms${ratio}${toRow}${errors}`;
}

/** The server CPU column (HTTP rows): microseconds of the server process's CPU per response. */
function formatServerCpu(row: Row): string {
  const cpu = row.kind === 'http' ? (row.detail.serverCpuUsPerRequest as number | null | undefined) : undefined;
  return typeof cpu === 'number' ? formatNumber(cpu, 1) : '—';
}

export function markdownTable(rows: Row[]): string {
  const withPostgres = rows.some((row) => row.postgres);
  const withCpu = rows.some((row) => row.kind === 'http');
  const lines = [
    `| row | req/s | p50 ms | p99 ms | errors | ratio to baseline | target | met/missed |${withCpu ? ' server CPU µs/req |' : ''}${withPostgres ? ' PostgreSQL |' : ''}`,
    `|---|---:|---:|---:|---:|---:|---|---|${withCpu ? '---:|' : ''}${withPostgres ? '---:|' : ''}`,
  ];
  for (const row of rows) {
    const label =
      row.kind === 'memory'
        ? `${row.label}: **${formatNumber(row.rssMb, 1)} MB**`
        : row.kind === 'size'
          ? `${row.label}: **${formatNumber(row.bytesPerPoint ?? null, 1)} bytes**`
          : row.label;
    lines.push(
      `| ${label} | ${formatNumber(row.requestsPerSecond)} | ${formatLatency(row.p50Ms)} | ${formatLatency(row.p99Ms)} | ${row.errors} | ${formatRatio(row)} | ${row.target ?? '—'} | ${row.met === null ? '—' : row.met ? 'met' : '**missed**'} |${withCpu ? ` ${formatServerCpu(row)} |` : ''}${withPostgres ? ` ${formatPostgres(row)} |` : ''}`,
    );
  }
  return lines.join('\n');
}
