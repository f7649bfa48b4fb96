// An account's resources held in memory: by id, in creation order, and in a list per type and per
// tag, kept current from the account's resource events (read-model.ts holds them per account).
import { ownBytes } from '../../platform/json-body.js';
import type { Event } from '../events/event.js';
import { resourceColumns, resourceJson } from './resource-json.js';
import type { Resource } from './schemas.js';
import type { ResourceQuery, ResourceRecord } from './store.js';
import type { ResourceView } from './view.js';
import { NewestIdCheck } from '../../storage/notifications.js';

/**
 * What an entry costs besides its JSON bytes: the record, its Buffer object, its tags, its place in
 * the id map and in the ordered, type and tag lists (measured: bench/HISTORY.md, "Large accounts").
 */
export const ENTRY_OVERHEAD = 420;

export const weightOf = (record: ResourceRecord) => record.json.length + ENTRY_OVERHEAD;

/**
 * What a record no longer held leaves of the weight: its JSON stays counted while others share its
 * block (their buffer is one allocation), and the whole block goes once the last of them goes.
 */
export function weightReleased(record: ResourceRecord): number {
  const { block } = record;
  if (!block) return weightOf(record);
  block.held -= 1;
  return block.held === 0 ? ENTRY_OVERHEAD + block.bytes : ENTRY_OVERHEAD;
}

export const isDeletion = (event: Event) => event.type === 'resource.deleted';
export const isResourceChange = (event: Event) => event.type.startsWith('resource.');

/** Where a record of `createdSeq` stands (or would stand) in a list ordered by `createdSeq`. */
function positionOf(list: readonly ResourceRecord[], createdSeq: number): number {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (list[middle]!.createdSeq < createdSeq) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Puts `record` in its place in the ordered list, replacing the record of the same creation. */
function place(list: ResourceRecord[], record: ResourceRecord): void {
  const last = list.at(-1);
  if (last === undefined || last.createdSeq < record.createdSeq) {
    list.push(record);
    return;
  }
  const position = positionOf(list, record.createdSeq);
  if (list[position]?.createdSeq === record.createdSeq) list[position] = record;
  else list.splice(position, 0, record);
}

function remove(list: ResourceRecord[], record: ResourceRecord): void {
  const position = positionOf(list, record.createdSeq);
  if (list[position]?.createdSeq === record.createdSeq) list.splice(position, 1);
}

/**
 * An account's resources with a list per type and per tag, each in creation order, so that a page
 * of any one filter is an array slice and its total the array's length, however large the account.
 */
export class AccountResources implements ResourceView {
  private readonly byId = new Map<string, ResourceRecord>();
  private readonly ordered: ResourceRecord[] = [];
  private readonly byType = new Map<string, ResourceRecord[]>();
  private readonly byTag = new Map<string, ResourceRecord[]>();
  /** Roughly the bytes held, for the memory budget. */
  weight = 0;
  countedWeight?: number;
  /** Several processes: the newest id heard of; while past `lastEventId`, storage answers and the log is read. */
  heardUpTo = 0;
  /** Several processes: when the newest id was last confirmed by storage. */
  readonly check = new NewestIdCheck();
  catchingUp = false;

  constructor(public lastEventId: number) {}

  get behind(): boolean {
    return this.heardUpTo > this.lastEventId;
  }

  get size(): number {
    return this.ordered.length;
  }

  get(id: string): ResourceRecord | undefined {
    return this.byId.get(id);
  }

  list({ type, tags, limit, offset }: ResourceQuery): { data: Buffer[]; total: number } {
    let matching = this.singleFilterList(type, tags);
    if (!matching) {
      // Several filters: the fewest candidates, checked against the rest.
      const candidates = [...(type === undefined ? [] : [this.byType.get(type) ?? []]), ...tags.map((tag) => this.byTag.get(tag) ?? [])];
      candidates.sort((a, b) => a.length - b.length);
      matching = candidates[0]!.filter((record) => (type === undefined || record.type === type) && tags.every((tag) => record.tags.includes(tag)));
    }
    return { data: matching.slice(offset, offset + limit).map((record) => record.json), total: matching.length };
  }

  /** A page of the whole account or of one filter, if it lies wholly within what is held. */
  pageWithin({ type, tags, limit, offset }: ResourceQuery): Buffer[] | undefined {
    const list = this.singleFilterList(type, tags);
    if (!list || offset + limit > list.length) return undefined;
    return list.slice(offset, offset + limit).map((record) => record.json);
  }

  /** The list that answers no filter or one (in creation order); undefined for several filters. */
  private singleFilterList(type: string | undefined, tags: readonly string[]): readonly ResourceRecord[] | undefined {
    if (tags.length === 0) return type === undefined ? this.ordered : (this.byType.get(type) ?? []);
    return tags.length === 1 && type === undefined ? (this.byTag.get(tags[0]!) ?? []) : undefined;
  }

  /** Adds a record, or replaces the one of the same id (same creation). */
  put(record: ResourceRecord): void {
    const existing = this.byId.get(record.id);
    this.byId.set(record.id, record);
    place(this.ordered, record);
    this.listOf(this.byType, record.type, record);
    for (const tag of record.tags) this.listOf(this.byTag, tag, record);
    if (existing) {
      this.weight -= weightReleased(existing);
      if (existing.type !== record.type) this.unlist(this.byType, existing.type, existing);
      for (const tag of existing.tags) if (!record.tags.includes(tag)) this.unlist(this.byTag, tag, existing);
    }
    this.weight += weightOf(record);
  }

  delete(id: string): void {
    const existing = this.byId.get(id);
    if (!existing) return;
    this.byId.delete(id);
    remove(this.ordered, existing);
    this.unlist(this.byType, existing.type, existing);
    for (const tag of existing.tags) this.unlist(this.byTag, tag, existing);
    this.weight -= weightReleased(existing);
  }

  private listOf(lists: Map<string, ResourceRecord[]>, key: string, record: ResourceRecord): void {
    const list = lists.get(key);
    if (list) place(list, record);
    else lists.set(key, [record]);
  }

  private unlist(lists: Map<string, ResourceRecord[]>, key: string, record: ResourceRecord): void {
    const list = lists.get(key);
    if (!list) return;
    remove(list, record);
    if (list.length === 0) lists.delete(key);
  }

  /**
   * Applies an event of the account. Replaying (events that the reads may already have seen, in
   * order), an update of a resource not held is of one deleted later, and is skipped; following
   * commits, it means the view is wrong: false, and the caller forgets the view.
   */
  apply(event: Event, replaying = false): boolean {
    this.lastEventId = event.id;
    if (!event.type.startsWith('resource.')) return true;
    const resource = (event.data as { resource: Resource }).resource;
    if (event.type === 'resource.deleted') {
      this.delete(resource.id);
      return true;
    }
    const existing = this.byId.get(resource.id);
    if (!existing && event.type !== 'resource.created') return replaying;
    this.put({
      id: resource.id,
      type: resource.type,
      tags: resource.tags,
      version: resource.version,
      // A resource's created event is where it stands in creation order.
      createdSeq: existing ? existing.createdSeq : event.id,
      json: ownBytes(resourceJson(resourceColumns(resource))),
    });
    return true;
  }
}
