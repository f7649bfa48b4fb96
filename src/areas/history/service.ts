// A resource's history (api-decisions §13): the points an account's writes record (a reaction of
// the write pipeline), read as pages of points or as buckets, several resources at once, and
// backfilled. Housekeeping (housekeeping.ts) builds the hourly aggregates and removes what expired.
import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import type { Clock } from '../../platform/clock.js';
import { DomainError, invalidField, notFound, type ErrorDetail } from '../../domain-errors.js';
import type { AccountWrites, InsideReaction, Written } from '../../account-writes/pipeline.js';
import type { OutcomeRecord } from '../../storage/transaction.js';
import { readingOf, stateProblem, type Resource, type ResourcesService, type ResourceState } from '../resources/service.js';
import {
  BUCKETS,
  bucketStarts,
  bucketsOf,
  DAY_MS,
  HISTORY_LIMITS,
  HOUR_MS,
  isBooleanType,
  stateOf,
  storedState,
  type Bucket,
  type BucketName,
  type SpanSummary,
} from './points.js';
import {
  addSeries,
  existingTimes,
  findSeries,
  markStale,
  readHours,
  readPoints,
  retireSeries,
  spansFromPoints,
  stateBefore,
  staleHours,
  upsertSeriesPoints,
  type Series,
  type SpanRow,
} from './store.js';
import { lockSeries } from './housekeeping-store.js';
import { stagedPointsJoined, stagePoints, type StagedPoint } from '../../storage/history-staged.js';
import type { StagedPoints } from './staged.js';

export interface HistoryOptions {
  /** Whether writes record their states (HISTORY); backfills and reads work either way. */
  enabled: boolean;
  retentionDays: number;
  rollupDays: number;
}

/** A range as asked: ISO times, each defaulting as §13 says. */
export interface RangeQuery {
  from?: string;
  to?: string;
}

export interface PointsQuery extends RangeQuery {
  limit?: number;
  order?: 'asc' | 'desc';
  cursor?: string;
}

export interface PointsPage {
  data: Array<{ at: string; state: ResourceState }>;
  /** The last point's time, to pass back as `cursor` for the next page; null when the page is empty. */
  cursor: string | null;
  hasMore: boolean;
}

export interface BucketsPage {
  bucket: BucketName;
  data: Bucket[];
}

export interface BackfillPoint {
  at: string;
  state: ResourceState;
}

export class HistoryService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly writes: AccountWrites,
    private readonly resources: ResourcesService,
    private readonly staged: StagedPoints,
    readonly options: HistoryOptions,
  ) {}

  /**
   * The pipeline's reaction: a series for each resource created, a point for each state recorded,
   * and the series of each resource deleted retired, in the write's transaction. On PostgreSQL the
   * points of updates are a part of the account's one statement instead.
   */
  readonly reaction: InsideReaction = {
    name: 'history points',
    skippableWhen: null,
    react: (exec, written) => this.record(exec, written),
    joined: (written) => {
      const points = this.pointsOf(written);
      return points.length > 0 ? stagedPointsJoined(points) : undefined;
    },
  };

  private async record(exec: Executor, { accountId, events }: Written): Promise<void> {
    const created: string[] = [];
    const deleted: string[] = [];
    for (const event of events) {
      if (event.type === 'resource.created') created.push((event.data.resource as Resource).id);
      else if (event.type === 'resource.deleted') deleted.push((event.data.resource as Resource).id);
    }
    if (created.length > 0) await addSeries(exec, accountId, created, this.clock.now().getTime());
    const points = this.pointsOf({ accountId, events, path: 'transaction' });
    if (points.length > 0) this.staged.noteStaged();
    await stagePoints(exec, points);
    await retireSeries(exec, deleted);
  }

  private pointsOf({ events }: Written): StagedPoint[] {
    if (!this.options.enabled) return [];
    const points: StagedPoint[] = [];
    for (const event of events) {
      const reading = readingOf(event);
      if (reading) points.push({ resourceId: reading.resourceId, at: Date.parse(reading.at), ...storedState(reading.state) });
    }
    return points;
  }

  /** A page of the resource's points in the range (from ≤ at < to), in order, after `cursor`. */
  async points(accountId: string, resourceId: string, query: PointsQuery): Promise<PointsPage> {
    await this.staged.settle();
    const { resource, series } = await this.seriesOf(accountId, resourceId);
    return this.pointsOfSeries(resource, series, query);
  }

  /** The resource's buckets of `bucket` over the range. */
  async buckets(accountId: string, resourceId: string, bucket: BucketName, query: RangeQuery): Promise<BucketsPage> {
    await this.staged.settle();
    const { resource, series } = await this.seriesOf(accountId, resourceId);
    return { bucket, data: await this.bucketsOfSeries(resource, series, bucket, query) };
  }

  /** Several resources' points (the first page of each) or buckets, in the order named. */
  async many(
    accountId: string,
    resourceIds: readonly string[],
    query: PointsQuery & { bucket?: BucketName },
  ): Promise<{ bucket?: BucketName; data: Array<{ resourceId: string } & (PointsPage | { data: Bucket[] })> }> {
    await this.staged.settle();
    const found = await Promise.all(
      resourceIds.map(async (resourceId, index) => {
        try {
          return await this.seriesOf(accountId, resourceId);
        } catch (error) {
          if (error instanceof DomainError && error.code === 'not_found') {
            throw new DomainError('not_found', `Resource ${resourceId} not found`, [{ path: `/resource/${index}`, message: 'no such resource' }]);
          }
          throw error;
        }
      }),
    );
    const { bucket } = query;
    const count = resourceIds.length;
    // One answer holds a bounded number of items, however many resources it names.
    if (bucket) {
      const { from, to } = this.range(query);
      const buckets = bucketStarts(from, to, BUCKETS[bucket]).count * count;
      if (buckets > HISTORY_LIMITS.manyBuckets) {
        throw invalidField(
          '/bucket',
          `spans ${buckets} buckets for ${count} resources; at most ${HISTORY_LIMITS.manyBuckets} in all: ask for a longer bucket or a shorter range`,
        );
      }
    }
    const limit = query.limit ?? Math.max(1, Math.min(HISTORY_LIMITS.defaultPoints, Math.floor(HISTORY_LIMITS.points / count)));
    if (!bucket && limit * count > HISTORY_LIMITS.points) {
      throw invalidField('/limit', `${limit} points for each of ${count} resources; at most ${HISTORY_LIMITS.points} in all`);
    }
    const data = [];
    for (const [index, { resource, series }] of found.entries()) {
      const resourceId = resourceIds[index]!;
      if (bucket) data.push({ resourceId, data: await this.bucketsOfSeries(resource, series, bucket, query) });
      else data.push({ resourceId, ...(await this.pointsOfSeries(resource, series, { ...query, limit })) });
    }
    return bucket ? { bucket, data } : { data };
  }

  /**
   * Readings taken earlier, without events or version changes: all stored, a point at an existing
   * time replacing it, or none when one is refused.
   */
  async backfill(
    accountId: string,
    resourceId: string,
    points: readonly BackfillPoint[],
    outcome?: OutcomeRecord,
  ): Promise<{ inserted: number; replaced: number }> {
    // Staged points first: a backfilled point at the same time as a live one replaces it.
    await this.staged.settle();
    const { resource, series } = await this.seriesOf(accountId, resourceId);
    const stored = this.checkBackfill(resource, points);
    return this.writes.withoutEvents(
      accountId,
      async (trx) => {
        // Locked, so that housekeeping does not aggregate these hours meanwhile without these points.
        const locked = await lockSeries(trx, series.key);
        if (!locked) throw notFound('Resource');
        const times = stored.map((point) => point.at);
        const existing = await existingTimes(trx, series.key, times);
        await upsertSeriesPoints(trx, series.key, stored);
        const aggregated = [...new Set(times.map((at) => at - (at % HOUR_MS)))].filter((hour) => hour < locked.rolledUntil);
        await markStale(trx, series.key, aggregated);
        return { inserted: stored.length - existing.size, replaced: existing.size };
      },
      outcome,
    );
  }

  private checkBackfill(resource: Resource, points: readonly BackfillPoint[]) {
    const now = this.clock.now().getTime();
    const oldest = now - this.options.retentionDays * DAY_MS;
    const updatedAt = Date.parse(resource.updatedAt);
    const seen = new Map<number, number>();
    const details: ErrorDetail[] = [];
    const stored = points.map((point, index) => {
      const at = Date.parse(point.at);
      const problem = stateProblem(resource.type, point.state);
      if (!Number.isFinite(at)) details.push({ path: `/points/${index}/at`, message: 'must be an ISO 8601 time' });
      else if (at > updatedAt || at > now)
        details.push({ path: `/points/${index}/at`, message: `must not be after the resource's updatedAt (${resource.updatedAt})` });
      else if (at < oldest)
        details.push({
          path: `/points/${index}/at`,
          message: `must be within the ${this.options.retentionDays} days of points kept (from ${new Date(oldest).toISOString()})`,
        });
      else if (seen.has(at)) details.push({ path: `/points/${index}/at`, message: `repeats the time of point ${seen.get(at)}` });
      else if (problem) details.push({ path: `/points/${index}/state`, message: problem });
      seen.set(at, index);
      return { at, ...storedState(point.state) };
    });
    if (details.length > 0) {
      const first = details[0]!;
      const more = details.length > 1 ? ` (and ${details.length - 1} more)` : '';
      throw new DomainError('invalid_request', `${first.path.slice(1)} ${first.message}${more}; nothing was stored`, details.slice(0, 10));
    }
    return stored;
  }

  private async seriesOf(accountId: string, resourceId: string): Promise<{ resource: Resource; series: Series }> {
    const resource = await this.resources.get(accountId, resourceId);
    const series = await findSeries(this.db, resource.id);
    if (!series) throw notFound('Resource');
    return { resource, series };
  }

  private range(query: RangeQuery): { from: number; to: number; now: number } {
    const now = this.clock.now().getTime();
    // By default up to now, this millisecond included: a state written just before is read back.
    const to = query.to === undefined ? now + 1 : Date.parse(query.to);
    const from = query.from === undefined ? now - HISTORY_LIMITS.defaultRangeMs : Date.parse(query.from);
    if (!(from < to)) throw invalidField('/from', 'must be before to');
    return { from, to, now };
  }

  private async pointsOfSeries(resource: Resource, series: Series, query: PointsQuery): Promise<PointsPage> {
    const { from, to, now } = this.range(query);
    const order = query.order ?? 'asc';
    const limit = query.limit ?? HISTORY_LIMITS.defaultPoints;
    let low = Math.max(from, now - this.options.retentionDays * DAY_MS);
    let high = to;
    if (query.cursor !== undefined) {
      const cursor = Date.parse(query.cursor);
      if (!Number.isFinite(cursor)) throw invalidField('/cursor', 'must be the cursor of a page');
      if (order === 'asc') low = Math.max(low, cursor + 1);
      else high = Math.min(high, cursor);
    }
    const rows = low < high ? await readPoints(this.db, series.key, { from: low, to: high, order, limit: limit + 1 }) : [];
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      data: page.map((row) => ({ at: new Date(row.at).toISOString(), state: stateOf(resource.type, row.value, row.text) })),
      cursor: last ? new Date(last.at).toISOString() : null,
      hasMore: rows.length > limit,
    };
  }

  private async bucketsOfSeries(resource: Resource, series: Series, bucket: BucketName, query: RangeQuery): Promise<Bucket[]> {
    const { from, to, now } = this.range(query);
    const size = BUCKETS[bucket];
    const asked = bucketStarts(from, to, size);
    if (asked.count > HISTORY_LIMITS.buckets) {
      throw invalidField('/bucket', `spans ${asked.count} buckets of ${bucket}; at most ${HISTORY_LIMITS.buckets}: ask for a longer bucket or a shorter range`);
    }
    // What is kept: raw points for the last HISTORY_RETENTION_DAYS, hourly aggregates for HISTORY_ROLLUP_DAYS.
    const kept = now - (size < HOUR_MS ? this.options.retentionDays : this.options.rollupDays) * DAY_MS;
    const first = Math.max(asked.first, kept - (((kept % size) + size) % size));
    const { end } = asked;
    if (first >= end) return [];
    const boolean = isBooleanType(resource.type);
    const spans =
      size < HOUR_MS
        ? await spansFromPoints(this.db, series.key, { from: first, end, size, now }, boolean)
        : await this.hourSpans(series, first, end, now, boolean);
    const before = boolean ? await stateBefore(this.db, series.key, first) : undefined;
    const carried = before && stateOf(resource.type, before.value, before.text);
    return bucketsOf(
      resource.type,
      spans.map((row) => summaryOf(resource, row, size < HOUR_MS ? size : HOUR_MS)),
      { first, end, size, now },
      carried,
    );
  }

  /** Hours [first, end) summed up: from the aggregates where built, else from the points. */
  private async hourSpans(series: Series, first: number, end: number, now: number, booleans: boolean): Promise<SpanRow[]> {
    const rolled = Math.min(end, Math.max(first, series.rolledUntil));
    const aggregated = first < rolled ? await readHours(this.db, series.key, first, rolled) : [];
    const stale = first < rolled ? await staleHours(this.db, series.key, first, rolled) : new Set<number>();
    const fromPoints: SpanRow[] = [];
    if (stale.size > 0) {
      const hours = [...stale].sort((a, b) => a - b);
      const rows = await spansFromPoints(this.db, series.key, { from: hours[0]!, end: hours.at(-1)! + HOUR_MS, size: HOUR_MS, now }, booleans);
      fromPoints.push(...rows.filter((row) => stale.has(row.start)));
    }
    if (rolled < end) fromPoints.push(...(await spansFromPoints(this.db, series.key, { from: rolled, end, size: HOUR_MS, now }, booleans)));
    return [...aggregated.filter((row) => !stale.has(row.start)), ...fromPoints].sort((a, b) => a.start - b.start);
  }
}

function summaryOf(resource: Resource, { lastValue, lastText, ...sums }: SpanRow, length: number): SpanSummary {
  return { ...sums, end: sums.start + length, last: stateOf(resource.type, lastValue, lastText) };
}
