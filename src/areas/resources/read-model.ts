// Each account's resources in memory, with their API JSON, so that reading a resource or a page of
// them reads no storage: stepping through 50 stored rows was most of a list's cost, and a point
// read a sixth of a GET's (measured with npm run bench). An account is read from storage once,
// together with its newest event id, and then kept up to date from its committed events: the
// resource events carry the whole resource, and event ids are consecutive, so a missed event shows
// as a gap, and the account is then forgotten and read again when next asked for.
// One process (SQLite) keeps them; several (PostgreSQL) cannot see each other's commits, so there
// every read goes to storage.
import { LRUCache } from 'lru-cache';
import { ownBytes } from '../../platform/json-body.js';
import { SizedLru } from '../../platform/sized-lru.js';
import type { ExternalWrites } from '../../storage/external-writes.js';
import type { Event } from '../events/event.js';
import { resourceColumns, resourceJson } from './resource-json.js';
import type { Resource, ResourceQuery, ResourceRecord } from './store.js';

/** The most resource JSON held for all accounts together, in bytes. */
export const RESOURCE_VIEWS_BUDGET = 64 * 1024 * 1024;
/** An account with more resources than this is read from storage on every request. */
export const RESOURCES_PER_VIEW = 20_000;
/** How long an account found too large is left to storage before it is read again. */
const TOO_LARGE_RECHECK_MS = 10 * 60_000;
/** The most accounts remembered as too large (their ids, a few dozen bytes each). */
const TOO_LARGE_MARKS = 10_000;
/** Roughly what an entry costs besides its JSON. */
const ENTRY_OVERHEAD = 160;

/** An account's resources as of one of its events. */
export interface ResourceView {
  /** The account's event this view stands at: it reflects every change up to it. */
  readonly lastEventId: number;
  get(id: string): ResourceRecord | undefined;
  /** A page in creation order (`json` of each) and how many match in all. */
  list(query: ResourceQuery): { data: Buffer[]; total: number };
}

export interface ResourceReadModel {
  /** The account's resources, or undefined when storage must answer; may read the account first. */
  view(accountId: string): ResourceView | undefined | Promise<ResourceView | undefined>;
  /** The account's resources if memory holds them now; never reads storage (safe inside a transaction). */
  held(accountId: string): ResourceView | undefined;
  /** After commit: the account's new events, in id order. */
  committed(accountId: string, events: readonly Event[]): void;
}

/** Reads an account's resources (at most `limit`, in creation order) and its newest event id, in one transaction. */
export type LoadResources = (accountId: string, limit: number) => Promise<{ records: ResourceRecord[]; newestEventId: number }>;

const weightOf = (record: ResourceRecord) => record.json.length + ENTRY_OVERHEAD;

class AccountResources implements ResourceView {
  private readonly byId = new Map<string, ResourceRecord>();
  /** Ascending `createdSeq`. */
  private readonly ordered: ResourceRecord[];

  constructor(
    public lastEventId: number,
    records: ResourceRecord[],
  ) {
    this.ordered = records;
    for (const record of records) this.byId.set(record.id, record);
  }

  get(id: string): ResourceRecord | undefined {
    return this.byId.get(id);
  }

  list({ type, tags, limit, offset }: ResourceQuery): { data: Buffer[]; total: number } {
    const matching =
      type === undefined && tags.length === 0
        ? this.ordered
        : this.ordered.filter((record) => (type === undefined || record.type === type) && tags.every((tag) => record.tags.includes(tag)));
    return { data: matching.slice(offset, offset + limit).map((record) => record.json), total: matching.length };
  }

  /** Applies the next event of the account; returns the change in weight. */
  apply(event: Event): number {
    this.lastEventId = event.id;
    if (!event.type.startsWith('resource.')) return 0;
    const resource = (event.data as { resource: Resource }).resource;
    const existing = this.byId.get(resource.id);
    let delta = existing ? -weightOf(existing) : 0;
    if (event.type === 'resource.deleted') {
      if (existing) {
        this.byId.delete(resource.id);
        this.ordered.splice(this.indexOf(existing), 1);
      }
      return delta;
    }
    const record: ResourceRecord = {
      id: resource.id,
      type: resource.type,
      tags: resource.tags,
      version: resource.version,
      // A resource's created event is where it stands in creation order.
      createdSeq: existing ? existing.createdSeq : event.id,
      json: ownBytes(resourceJson(resourceColumns(resource))),
    };
    this.byId.set(record.id, record);
    if (existing) this.ordered[this.indexOf(existing)] = record;
    else this.ordered.push(record);
    delta += weightOf(record);
    return delta;
  }

  private indexOf(record: ResourceRecord): number {
    let low = 0;
    let high = this.ordered.length - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.ordered[middle]!.createdSeq < record.createdSeq) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

interface Loading {
  promise: Promise<ResourceView | undefined>;
  /** The newest event of the account committed while it loads: past what it read, it is behind. */
  newestAnnounced: number;
}

export class InMemoryResourceReadModel implements ResourceReadModel {
  private readonly views: SizedLru<string, AccountResources>;
  private readonly loading = new Map<string, Loading>();
  /**
   * Accounts found too large to keep, read from storage until the mark runs out; then they are
   * read once more, so an account that shrank is kept again. Bounded like everything held.
   */
  private readonly tooLarge: LRUCache<string, true>;

  constructor(
    private readonly load: LoadResources,
    private readonly externalWrites?: ExternalWrites,
    budget = RESOURCE_VIEWS_BUDGET,
    tooLargeRecheckMs = TOO_LARGE_RECHECK_MS,
  ) {
    this.views = new SizedLru(budget);
    this.tooLarge = new LRUCache({ max: TOO_LARGE_MARKS, ttl: tooLargeRecheckMs });
  }

  view(accountId: string): ResourceView | undefined | Promise<ResourceView | undefined> {
    this.forgetIfWrittenElsewhere();
    const view = this.views.get(accountId);
    if (view) return view;
    if (this.tooLarge.has(accountId)) return undefined;
    let loading = this.loading.get(accountId);
    if (!loading) {
      const started: Loading = { promise: Promise.resolve(undefined), newestAnnounced: 0 };
      started.promise = this.loadView(accountId, started);
      this.loading.set(accountId, started);
      loading = started;
    }
    return loading.promise;
  }

  held(accountId: string): ResourceView | undefined {
    return this.views.peek(accountId);
  }

  private async loadView(accountId: string, loading: Loading): Promise<ResourceView | undefined> {
    try {
      const { records, newestEventId } = await this.load(accountId, RESOURCES_PER_VIEW + 1);
      const weight = records.reduce((sum, record) => sum + weightOf(record), 0);
      if (records.length > RESOURCES_PER_VIEW || weight > this.views.budget / 4) {
        // The read stopped at the limit, so it is not the whole account: storage answers instead.
        this.tooLarge.set(accountId, true);
        return undefined;
      }
      const view = new AccountResources(newestEventId, records);
      if (loading.newestAnnounced <= newestEventId) this.views.set(accountId, view, weight);
      // A consistent snapshot taken after the requests waiting for it arrived: right for them
      // even when a later commit keeps it from being kept.
      return view;
    } finally {
      if (this.loading.get(accountId) === loading) this.loading.delete(accountId);
    }
  }

  /** Another process changed resources this one was not told of: nothing held can be trusted. */
  private forgetIfWrittenElsewhere(): void {
    if (!this.externalWrites?.happened()) return;
    this.views.clear();
    for (const loading of this.loading.values()) loading.newestAnnounced = Infinity;
    this.loading.clear();
  }

  committed(accountId: string, events: readonly Event[]): void {
    const loading = this.loading.get(accountId);
    if (loading) {
      loading.newestAnnounced = Math.max(loading.newestAnnounced, events.at(-1)?.id ?? 0);
      // Requests from now on must see these events: they start a new read instead of joining this one.
      this.loading.delete(accountId);
    }
    const view = this.views.peek(accountId);
    if (!view) return;
    let delta = 0;
    for (const event of events) {
      if (event.id <= view.lastEventId) continue;
      if (event.id !== view.lastEventId + 1) {
        // An event this process has not been told of yet lies in between: read the account again.
        this.views.delete(accountId);
        return;
      }
      delta += view.apply(event);
    }
    this.views.resize(accountId, delta);
  }
}

/** For several processes sharing storage: nothing is kept, every read goes to storage. */
export class NoResourceReadModel implements ResourceReadModel {
  view(): undefined {
    return undefined;
  }

  held(): undefined {
    return undefined;
  }

  committed(): void {}
}
