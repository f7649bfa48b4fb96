// How resources are written through the account-write pipeline (src/account-writes/pipeline.ts):
// a creation, an update and a deletion inside an account's write, and the kind of write that lets
// updates of one account waiting together be decided against memory and written by one statement.
import type { Clock } from '../../platform/clock.js';
import { notFound } from '../../domain-errors.js';
import { newId } from '../../platform/ids.js';
import type { AccountWrite, OneStatement, Outcome, WriteKind } from '../../account-writes/pipeline.js';
import type { Event } from '../events/event.js';
import type { ResourceReadModel } from './read-model.js';
import { checkPrecondition, updated, type CreateResourceInput, type ResourceUpdate } from './rules.js';
import {
  deleteResource,
  findResource,
  findResources,
  insertResource,
  insertResourcesJoined,
  updateResource,
  updateResourcesJoined,
  type Resource,
} from './store.js';
import { changeCounts, countsOf } from './count-store.js';

/**
 * PostgreSQL: the most updates of one account written in one statement. Bounded by count alone:
 * an update's values are at most ~22 KiB (attributes, name, state), so a batch stays under 2.2 MiB.
 */
const UPDATE_BATCH = { items: 100, bytes: Number.POSITIVE_INFINITY };

/** An update decided: the resource it writes, the fields it changes, the resource before it, and whether it sent a state. */
interface DecidedUpdate {
  resource: Resource;
  changed: string[];
  previous: Resource;
  stateSent: boolean;
}

/** A state a resource took: the history's point (api-decisions §13). */
export interface StateReading {
  resourceId: string;
  type: Resource['type'];
  state: Resource['state'];
  /** The version's updatedAt. */
  at: string;
}

/** The resource.updated events whose update sent a state, even one equal to the last: each is a reading. */
const sentState = new WeakSet<Event>();

/**
 * The state an event of an account's write records, if any: every creation, and every update that
 * sent `state` (a schedule's set_state, a batch's update). Only for events of this process's writes.
 */
export function readingOf(event: Event): StateReading | undefined {
  if (event.type !== 'resource.created' && !sentState.has(event)) return undefined;
  const resource = event.data.resource as Resource;
  return { resourceId: resource.id, type: resource.type, state: resource.state, at: resource.updatedAt };
}

export class ResourceWrites {
  constructor(
    private readonly clock: Clock,
    /** The accounts' resources in memory: writes are decided against them when they are current. */
    private readonly views: ResourceReadModel,
  ) {}

  /**
   * Updates: on several processes those of one account that waited together are decided in order
   * against this process's copy of the account (each seeing the ones before it), and written with
   * their events by one statement while storage still stands at the copy's event. A refusal decided
   * against the copy stands only once the statement wrote: the copy was exact then. From the first
   * update that changes tags (its counts and tag rows), and for all of them when the statement
   * writes nothing, they take one transaction.
   */
  readonly updates: WriteKind<ResourceUpdate, Resource> = {
    limits: UPDATE_BATCH,
    alone: (accountId, items) => this.decideAlone(accountId, items),
    inTransaction: (write, items) => this.updateAll(write, items),
  };

  async create(write: AccountWrite, input: CreateResourceInput, name: string): Promise<Resource> {
    const [resource] = await this.createAll(write, [{ input, name }]);
    return resource!;
  }

  /**
   * Creations inside the account's write, in order, their event ids taken at once; on PostgreSQL
   * several of them (a batch's run) are one statement with their events and tags.
   */
  async createAll(write: AccountWrite, creations: ReadonlyArray<{ input: CreateResourceInput; name: string }>): Promise<Resource[]> {
    const now = this.clock.now().toISOString();
    const resources = creations.map(
      ({ input, name }): Resource => ({
        id: newId('res'),
        name,
        type: input.type,
        state: input.state,
        attributes: input.attributes ?? {},
        tags: input.tags ?? [],
        version: 1,
        createdAt: now,
        updatedAt: now,
      }),
    );
    const events = resources.map((resource): Event => ({ id: 0, type: 'resource.created', data: { resource }, createdAt: '' }));
    if (resources.length > 1 && write.appendWith) {
      await write.appendWith(events, insertResourcesJoined(write.accountId, resources));
    } else {
      await write.appendAll(events);
      for (const [index, resource] of resources.entries()) await insertResource(write.trx, write.accountId, resource, events[index]!.id);
    }
    await changeCounts(
      write.trx,
      write.accountId,
      resources.flatMap((resource) => countsOf(resource.type, resource.tags, 1)),
    );
    return resources;
  }

  /** One update inside a write the caller holds (a schedule's run); throws when refused. */
  async update(write: AccountWrite, update: ResourceUpdate): Promise<Resource> {
    const [outcome] = await this.updateAll(write, [update]);
    if ('error' in outcome!) throw outcome.error;
    return outcome!.value;
  }

  async delete(write: AccountWrite, id: string, precondition: ResourceUpdate['precondition']): Promise<void> {
    const current = (await this.current(write, [id])).get(id);
    if (!current) throw notFound('Resource');
    checkPrecondition(current, precondition);
    await deleteResource(write.trx, write.accountId, current);
    await write.append('resource.deleted', { resource: current });
  }

  private decideAlone(accountId: string, items: readonly ResourceUpdate[]): OneStatement<Resource> | undefined {
    const view = this.views.held(accountId);
    if (!view) return undefined;
    const { outcomes, decided } = decideUpdates(
      items,
      (id) => parsed(view.get(id)),
      this.clock.now().toISOString(),
      (update) => update.changed.includes('tags'),
    );
    return { outcomes, events: decided.map(updatedEvent), rows: updateResourcesJoined(accountId, newestOf(decided)), ifNewestIs: view.lastEventId };
  }

  /**
   * The updates in the account's write, each decided against the account as its lock leaves it
   * (read once for all of them), so a refusal writes nothing. A tag change is written by itself, a
   * single update by its version-checked statement, and on PostgreSQL a run of updates that keep
   * their tags (several processes' turn, or a batch) with their events in one statement.
   */
  async updateAll(write: AccountWrite, updates: readonly ResourceUpdate[]): Promise<Outcome<Resource>[]> {
    const { accountId } = write;
    const stored = await this.current(
      write,
      updates.map((update) => update.id),
    );
    const { outcomes, decided } = decideUpdates(updates, (id) => stored.get(id), this.clock.now().toISOString());
    for (let start = 0; start < decided.length; ) {
      let end = start + 1;
      if (!decided[start]!.changed.includes('tags')) while (end < decided.length && !decided[end]!.changed.includes('tags')) end++;
      const run = decided.slice(start, end);
      if (run.length > 1 && write.appendWith) {
        await write.appendWith(run.map(updatedEvent), updateResourcesJoined(accountId, newestOf(run)));
      } else {
        for (const { resource, previous, changed } of run) {
          const tags = changed.includes('tags') ? previous.tags : undefined;
          // The account row is locked by the write, so the version cannot have moved.
          if (!(await updateResource(write.trx, accountId, resource, previous.version, tags))) {
            throw new Error(`resource ${resource.id} changed during its own update`);
          }
        }
        await write.appendAll(run.map(updatedEvent));
      }
      start = end;
    }
    return outcomes;
  }

  /**
   * The resources as the write sees them: from memory when memory stands at the same event (it
   * then holds every committed change, and the write has made none yet), else from storage.
   */
  private async current(write: AccountWrite, ids: readonly string[]): Promise<Map<string, Resource>> {
    const view = this.views.held(write.accountId);
    if (view?.lastEventId !== write.lastEventId) {
      if (ids.length !== 1) return findResources(write.trx, write.accountId, ids);
      const found = await findResource(write.trx, write.accountId, ids[0]!);
      return new Map(found ? [[found.id, found]] : []);
    }
    const found = new Map<string, Resource>();
    for (const id of ids) {
      const resource = parsed(view.get(id));
      if (resource) found.set(id, resource);
    }
    return found;
  }
}

/**
 * Decides the updates in order against the resources `current` gives, each seeing the ones before
 * it: what each answers, and the updates to write, in order. With `stopBefore`, stops before the
 * first update it accepts (neither answered nor written).
 */
function decideUpdates(
  updates: readonly ResourceUpdate[],
  current: (id: string) => Resource | undefined,
  now: string,
  stopBefore?: (update: DecidedUpdate) => boolean,
): { outcomes: Outcome<Resource>[]; decided: DecidedUpdate[] } {
  const outcomes: Outcome<Resource>[] = [];
  const decided: DecidedUpdate[] = [];
  const decidedNow = new Map<string, Resource>();
  for (const item of updates) {
    const previous = decidedNow.get(item.id) ?? current(item.id);
    if (!previous) {
      outcomes.push({ error: notFound('Resource') });
      continue;
    }
    let update: DecidedUpdate;
    try {
      update = { ...updated(previous, item, now), previous, stateSent: item.input.state !== undefined };
    } catch (error) {
      outcomes.push({ error });
      continue;
    }
    if (stopBefore?.(update)) break;
    decidedNow.set(item.id, update.resource);
    decided.push(update);
    outcomes.push({ value: update.resource });
  }
  return { outcomes, decided };
}

/** The event an update writes. */
function updatedEvent({ resource, changed, stateSent }: DecidedUpdate): Event {
  const event: Event = { id: 0, type: 'resource.updated', data: { resource, changed }, createdAt: '' };
  if (stateSent) sentState.add(event);
  return event;
}

/** Each resource the updates change once, with its newest values. */
function newestOf(updates: readonly DecidedUpdate[]): Resource[] {
  return [...new Map(updates.map((update) => [update.resource.id, update.resource])).values()];
}

function parsed(record: { json: Buffer } | undefined): Resource | undefined {
  return record && (JSON.parse(record.json.toString()) as Resource);
}
