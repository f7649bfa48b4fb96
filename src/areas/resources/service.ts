import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';
import type { Clock } from '../../platform/clock.js';
import { DomainError, badRequest, invalidField, notFound, type ErrorDetail } from '../../domain-errors.js';
import { newId } from '../../platform/ids.js';
import type { Event, EventsService, EventWriter } from '../events/service.js';
import type { AccountBatches, Waiting } from '../events/account-queue.js';
import type { ResourceReadModel } from './read-model.js';
import {
  deleteResource,
  findResource,
  findResources,
  insertResource,
  updateResource,
  updateResourcesJoined,
  type Resource,
  type ResourceState,
  type ResourceType,
} from './store.js';

export type { Resource, ResourceState, ResourceType };

export const NAME_MAX = 200;
export const STATE_TEXT_MAX = 255;
export const ATTRIBUTES_MAX_BYTES = 16 * 1024;
export const TAGS_MAX = 20;

/**
 * PostgreSQL: the most updates of one account written in one statement. Bounded by count alone:
 * an update's values are at most ~22 KiB (attributes, name, state), so a batch stays under 2.2 MiB.
 */
const UPDATE_BATCH = { items: 100, bytes: Number.POSITIVE_INFINITY };

export interface CreateResourceInput {
  name: string;
  type: ResourceType;
  state: ResourceState;
  attributes?: Record<string, unknown>;
  tags?: string[];
}

export interface UpdateResourceInput {
  name?: string;
  state?: ResourceState;
  attributes?: Record<string, unknown>;
  tags?: string[];
  type?: unknown;
}

/** A version precondition from If-Match: the versions it accepts, `*` (any), or none given. */
export type VersionPrecondition = number[] | '*' | undefined;

/** What a state of each type may be (docs/decisions.md: "Resources"); undefined when allowed, else the reason. */
export function stateProblem(type: ResourceType, state: unknown): string | undefined {
  const isText = typeof state === 'string';
  switch (type) {
    case 'sensor':
      if (typeof state === 'number') return Number.isFinite(state) ? undefined : 'must be a finite number';
      if (isText) return state.length <= STATE_TEXT_MAX ? undefined : `must be at most ${STATE_TEXT_MAX} characters`;
      return 'must be a number or a string for a sensor';
    case 'binary_sensor':
    case 'switch':
      return typeof state === 'boolean' ? undefined : `must be true or false for a ${type}`;
    case 'text':
      if (!isText) return 'must be a string for a text resource';
      return state.length <= STATE_TEXT_MAX ? undefined : `must be at most ${STATE_TEXT_MAX} characters`;
  }
}

function validateFields(
  input: { name?: string; attributes?: Record<string, unknown>; tags?: string[] },
  type: ResourceType,
  state: unknown,
): string | undefined {
  const details: ErrorDetail[] = [];
  let name: string | undefined;
  if (input.name !== undefined) {
    name = input.name.trim();
    if (name.length === 0 || name.length > NAME_MAX) details.push({ path: '/name', message: `must be 1-${NAME_MAX} characters after trimming` });
  }
  if (state !== undefined) {
    const problem = stateProblem(type, state);
    if (problem) details.push({ path: '/state', message: problem });
  }
  if (input.attributes !== undefined && Buffer.byteLength(JSON.stringify(input.attributes)) > ATTRIBUTES_MAX_BYTES) {
    details.push({ path: '/attributes', message: `must be at most ${ATTRIBUTES_MAX_BYTES} bytes as JSON` });
  }
  if (details.length > 0) throw new DomainError('invalid_request', details.map((d) => `${d.path.slice(1)} ${d.message}`).join('; '), details);
  return name;
}

export class ResourcesService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly events: EventsService,
    /** The accounts' resources in memory (ResourceReads keeps them): updates are decided against them when current. */
    private readonly views: ResourceReadModel,
  ) {
    this.updates = events.batches((accountId, waiting) => this.writeUpdates(accountId, waiting), UPDATE_BATCH);
  }

  /** PostgreSQL: updates of one account that wait for its turn together. */
  private readonly updates: AccountBatches<PendingUpdate, Resource> | undefined;

  async create(accountId: string, input: CreateResourceInput): Promise<Resource> {
    // Refused before a transaction starts.
    const name = validateFields(input, input.type, input.state) ?? '';
    return this.events.transact(accountId, (writer) => this.insertNew(writer, input, name));
  }

  /** The creation inside an event transaction the caller already holds (one for many resources). */
  async createWithin(writer: EventWriter, input: CreateResourceInput): Promise<Resource> {
    return this.insertNew(writer, input, validateFields(input, input.type, input.state) ?? '');
  }

  private async insertNew(writer: EventWriter, input: CreateResourceInput, name: string): Promise<Resource> {
    const now = this.clock.now().toISOString();
    const resource: Resource = {
      id: newId('res'),
      name,
      type: input.type,
      state: input.state,
      attributes: input.attributes ?? {},
      tags: input.tags ?? [],
      version: 1,
      createdAt: now,
      updatedAt: now,
    };
    const event = await writer.append('resource.created', { resource });
    await insertResource(writer.trx, writer.accountId, resource, event.id);
    return resource;
  }

  async get(accountId: string, id: string): Promise<Resource> {
    const resource = await findResource(this.db, accountId, id);
    if (!resource) throw notFound('Resource');
    return resource;
  }

  async update(accountId: string, id: string, input: UpdateResourceInput, precondition: VersionPrecondition): Promise<Resource> {
    if (input.type !== undefined) throw invalidField('/type', 'cannot be changed; create a new resource instead');
    if (input.name === undefined && input.state === undefined && input.attributes === undefined && input.tags === undefined) {
      throw badRequest('Send at least one of name, state, attributes, tags');
    }
    if (this.updates) return this.updates.add(accountId, { id, input, precondition });
    return this.events.transact(accountId, (writer) => this.updateWithin(writer, id, input, precondition));
  }

  /** The update inside an event transaction the caller already holds (schedules use it). */
  async updateWithin(writer: EventWriter, id: string, input: UpdateResourceInput, precondition: VersionPrecondition = undefined): Promise<Resource> {
    const { accountId } = writer;
    const current = await this.currentWithin(writer, id);
    if (!current) throw notFound('Resource');
    const { resource, changed } = updated(current, { id, input, precondition }, this.clock.now().toISOString());
    // The account row is locked by the event transaction, so the version cannot have moved.
    if (!(await updateResource(writer.trx, accountId, resource, current.version, changed.includes('tags') ? current.tags : undefined))) {
      throw new Error(`resource ${id} changed during its own update`);
    }
    await writer.append('resource.updated', { resource, changed });
    return resource;
  }

  /**
   * PostgreSQL, the account's turn come: the updates that waited together are decided in order
   * against this process's copy of the account (each seeing the ones before it), and written with
   * their events by one statement, if storage still stands at the copy's event and the account has
   * no webhooks. A refusal decided against the copy stands only once the statement wrote: the copy
   * was exact then. From the first update that changes tags (its counts and tag rows), and for all
   * of them when the statement writes nothing (another process wrote, or webhooks), they take one
   * transaction.
   */
  private async writeUpdates(accountId: string, waiting: readonly Waiting<PendingUpdate, Resource>[]): Promise<void> {
    let settled = 0;
    const view = this.views.held(accountId);
    if (view) {
      const at = view.lastEventId;
      const { outcomes, decided } = decideUpdates(
        waiting.map((entry) => entry.item),
        (id) => parsed(view.get(id)),
        this.clock.now().toISOString(),
        (update) => update.changed.includes('tags'),
      );
      if (
        decided.length > 0 &&
        (await this.events.appendAlone(accountId, decided.map(updatedEvent), {
          ifNewestIs: at,
          also: updateResourcesJoined(accountId, newestOf(decided)),
        }))
      ) {
        settle(waiting, outcomes);
        settled = outcomes.length;
      }
    }
    const rest = waiting.slice(settled);
    if (rest.length > 0)
      settle(
        rest,
        await this.writeUpdatesInTransaction(
          accountId,
          rest.map((entry) => entry.item),
        ),
      );
  }

  /**
   * The updates in one transaction, each decided against storage as the account's lock leaves it
   * (read once for all of them), so a refusal writes nothing. Updates that keep their tags are
   * written together, a tag change by itself; a failure of storage fails them all.
   */
  private async writeUpdatesInTransaction(accountId: string, updates: readonly PendingUpdate[]): Promise<Outcome[]> {
    let outcomes: Outcome[] = [];
    try {
      await this.events.transactInTurn(accountId, async (writer) => {
        const stored = await this.currentManyWithin(writer, updates);
        const decision = decideUpdates(updates, (id) => stored.get(id), this.clock.now().toISOString());
        outcomes = decision.outcomes;
        const { decided } = decision;
        if (decided.length === 0) throw new EveryOneRefused();
        for (let start = 0; start < decided.length; ) {
          const update = decided[start]!;
          if (update.changed.includes('tags')) {
            if (!(await updateResource(writer.trx, accountId, update.resource, update.previous.version, update.previous.tags))) {
              throw new Error(`resource ${update.resource.id} changed during its own update`);
            }
            await writer.append('resource.updated', updatedEvent(update).data);
            start++;
            continue;
          }
          // A run of updates that keep their tags: one statement.
          let end = start + 1;
          while (end < decided.length && !decided[end]!.changed.includes('tags')) end++;
          const run = decided.slice(start, end);
          await writer.appendMany(run.map(updatedEvent), updateResourcesJoined(accountId, newestOf(run)));
          start = end;
        }
      });
    } catch (error) {
      if (!(error instanceof EveryOneRefused)) throw error;
    }
    return outcomes;
  }

  /** The resources the updates name, as the writer's transaction sees them (see `currentWithin`). */
  private async currentManyWithin(writer: EventWriter, updates: readonly PendingUpdate[]): Promise<Map<string, Resource>> {
    const view = this.views.held(writer.accountId);
    if (view?.lastEventId !== writer.lastEventId)
      return findResources(
        writer.trx,
        writer.accountId,
        updates.map((update) => update.id),
      );
    const found = new Map<string, Resource>();
    for (const { id } of updates) {
      const resource = parsed(view.get(id));
      if (resource) found.set(id, resource);
    }
    return found;
  }

  async delete(accountId: string, id: string, precondition: VersionPrecondition): Promise<void> {
    await this.events.transact(accountId, async (writer) => {
      const current = await this.currentWithin(writer, id);
      if (!current) throw notFound('Resource');
      checkPrecondition(current, precondition);
      await deleteResource(writer.trx, accountId, current);
      await writer.append('resource.deleted', { resource: current });
    });
  }

  /**
   * The resource as the writer's transaction sees it: from memory when memory stands at the same
   * event (it then holds every committed change, and the transaction has made none yet), else
   * from storage.
   */
  private async currentWithin(writer: EventWriter, id: string): Promise<Resource | undefined> {
    const view = this.views.held(writer.accountId);
    if (view?.lastEventId !== writer.lastEventId) return findResource(writer.trx, writer.accountId, id);
    return parsed(view.get(id));
  }
}

/** What came of one update: the resource it wrote, or the error that refused it. */
type Outcome = { resource: Resource } | { error: unknown };

/** Thrown to end a transaction of updates that all were refused: it has nothing to commit. */
class EveryOneRefused extends Error {}

function settle(waiting: readonly Waiting<PendingUpdate, Resource>[], outcomes: readonly Outcome[]): void {
  for (const [index, outcome] of outcomes.entries()) {
    if ('resource' in outcome) waiting[index]!.resolve(outcome.resource);
    else waiting[index]!.reject(outcome.error);
  }
}

/** An update decided: the resource it writes, the fields it changes, and the resource before it. */
interface DecidedUpdate {
  resource: Resource;
  changed: string[];
  previous: Resource;
}

/**
 * Decides the updates in order against the resources `current` gives, each seeing the ones before
 * it: what each answers, and the updates to write, in order. With `stopBefore`, stops before the
 * first update it accepts (neither answered nor written).
 */
function decideUpdates(
  updates: readonly PendingUpdate[],
  current: (id: string) => Resource | undefined,
  now: string,
  stopBefore?: (update: DecidedUpdate) => boolean,
): { outcomes: Outcome[]; decided: DecidedUpdate[] } {
  const outcomes: Outcome[] = [];
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
      update = { ...updated(previous, item, now), previous };
    } catch (error) {
      outcomes.push({ error });
      continue;
    }
    if (stopBefore?.(update)) break;
    decidedNow.set(item.id, update.resource);
    decided.push(update);
    outcomes.push({ resource: update.resource });
  }
  return { outcomes, decided };
}

/** The event an update writes. */
const updatedEvent = ({ resource, changed }: DecidedUpdate): Event => ({ id: 0, type: 'resource.updated', data: { resource, changed }, createdAt: '' });

/** Each resource the updates change once, with its newest values. */
function newestOf(updates: readonly DecidedUpdate[]): Resource[] {
  return [...new Map(updates.map((update) => [update.resource.id, update.resource])).values()];
}

/** An update waiting for its account's turn. */
interface PendingUpdate {
  id: string;
  input: UpdateResourceInput;
  precondition: VersionPrecondition;
}

/** The resource after the update, and the fields whose values changed; throws when the precondition or the values refuse it. */
function updated(current: Resource, { input, precondition }: PendingUpdate, now: string): { resource: Resource; changed: string[] } {
  checkPrecondition(current, precondition);
  const name = validateFields(input, current.type, input.state);
  const resource: Resource = {
    ...current,
    name: name ?? current.name,
    state: input.state ?? current.state,
    attributes: input.attributes ?? current.attributes,
    tags: input.tags ?? current.tags,
    version: current.version + 1,
    updatedAt: now,
  };
  const changed = (['name', 'state', 'attributes', 'tags'] as const).filter((field) => JSON.stringify(resource[field]) !== JSON.stringify(current[field]));
  return { resource, changed };
}

function parsed(record: { json: Buffer } | undefined): Resource | undefined {
  return record && (JSON.parse(record.json.toString()) as Resource);
}

function checkPrecondition(current: Resource, precondition: VersionPrecondition): void {
  if (precondition === undefined || precondition === '*' || precondition.includes(current.version)) return;
  throw new DomainError('precondition_failed', `The resource is at version ${current.version}`, [
    { path: '/version', message: `current version is ${current.version}`, currentVersion: current.version },
  ]);
}
