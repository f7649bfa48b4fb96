import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';
import type { Clock } from '../../platform/clock.js';
import { DomainError, badRequest, invalidField, notFound, type ErrorDetail } from '../../domain-errors.js';
import { newId } from '../../platform/ids.js';
import type { JsonParts } from '../../platform/json-body.js';
import type { EventsService, EventWriter } from '../events/service.js';
import type { DomainEvents } from '../../domain-events.js';
import type { LoadResources, ResourceReadModel } from './read-model.js';
import {
  allResources,
  deleteResource,
  findResource,
  findResourceJson,
  insertResource,
  listResourcesJson,
  countResources,
  resourceCreationOrder,
  resourceRecords,
  updateResource,
  type Resource,
  type ResourceQuery,
  type ResourceState,
  type ResourceType,
} from './store.js';

export type { Resource, ResourceState, ResourceType };

export const RESOURCE_TYPES: readonly ResourceType[] = ['sensor', 'binary_sensor', 'switch', 'text'];
export const NAME_MAX = 200;
export const STATE_TEXT_MAX = 255;
export const ATTRIBUTES_MAX_BYTES = 16 * 1024;
export const TAGS_MAX = 20;

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
  private readonly views: ResourceReadModel;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly events: EventsService,
    readModel: (load: LoadResources) => ResourceReadModel,
    domain: DomainEvents,
  ) {
    this.views = readModel(async (accountId, limit, afterSeq, orderLimit) =>
      afterSeq === undefined
        ? db.transaction().execute(async (trx) => {
            const newestEventId = await events.newestId(accountId, trx);
            const records = await resourceRecords(trx, accountId, limit);
            const creationOrder = orderLimit !== undefined && records.length === limit ? await resourceCreationOrder(trx, accountId, orderLimit) : undefined;
            return { newestEventId, records, creationOrder };
          })
        : { newestEventId: 0, records: await resourceRecords(db, accountId, limit, afterSeq) },
    );
    domain.afterCommit('events.appended', ({ accountId, events: committed }) => this.views.committed(accountId, committed));
  }

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

  /** A Resource as JSON (UTF-8), from the read model or storage, with its version (the ETag). */
  async getJson(accountId: string, id: string): Promise<{ version: number; json: Buffer }> {
    let view = this.views.view(accountId);
    // Kept views answer without a promise: this is the hottest read of the API.
    if (view instanceof Promise) view = await view;
    const resource = view ? view.get(id) : (this.views.reading(accountId)?.get(id) ?? (await findResourceJson(this.db, accountId, id)));
    if (!resource) throw notFound('Resource');
    return resource;
  }

  /** A ResourceList (`data`, `limit`, `offset`, `total`, `hasMore`) as JSON parts (UTF-8): each resource's JSON, spliced in where it is sent. */
  async listJson(accountId: string, query: ResourceQuery): Promise<JsonParts> {
    let view = this.views.view(accountId);
    if (view instanceof Promise) view = await view;
    const { data, total } = view ? view.list(query) : await this.listFromStorage(accountId, query);
    const hasMore = query.offset + data.length < total;
    return { head: '{"data":[', items: data, tail: `],"limit":${query.limit},"offset":${query.offset},"total":${total},"hasMore":${hasMore}}` };
  }

  /** While the account is not held in memory: storage, helped by what is read of it so far. */
  private async listFromStorage(accountId: string, query: ResourceQuery): Promise<{ data: Buffer[]; total: number }> {
    const reading = this.views.reading(accountId);
    if (!reading) return listResourcesJson(this.db, accountId, query);
    const startSeq = query.type === undefined && query.tags.length === 0 ? reading.creationSeqAt(query.offset) : undefined;
    const known = reading.total(query);
    const page = reading.pageWithin(query);
    if (page && known !== undefined) return { data: page, total: known };
    const { data, total } = page
      ? { data: page, total: await countResources(this.db, accountId, query) }
      : await listResourcesJson(this.db, accountId, query, startSeq, known);
    if (known === undefined) reading.counted(query, total);
    return { data, total };
  }

  async update(accountId: string, id: string, input: UpdateResourceInput, precondition: VersionPrecondition): Promise<Resource> {
    if (input.type !== undefined) throw invalidField('/type', 'cannot be changed; create a new resource instead');
    if (input.name === undefined && input.state === undefined && input.attributes === undefined && input.tags === undefined) {
      throw badRequest('Send at least one of name, state, attributes, tags');
    }
    return this.events.transact(accountId, (writer) => this.updateWithin(writer, id, input, precondition));
  }

  /** The update inside an event transaction the caller already holds (schedules use it). */
  async updateWithin(writer: EventWriter, id: string, input: UpdateResourceInput, precondition: VersionPrecondition = undefined): Promise<Resource> {
    const { accountId } = writer;
    const current = await this.currentWithin(writer, id);
    if (!current) throw notFound('Resource');
    checkPrecondition(current, precondition);
    const name = validateFields(input, current.type, input.state);
    const next: Resource = {
      ...current,
      name: name ?? current.name,
      state: input.state ?? current.state,
      attributes: input.attributes ?? current.attributes,
      tags: input.tags ?? current.tags,
      version: current.version + 1,
      updatedAt: this.clock.now().toISOString(),
    };
    const changed = (['name', 'state', 'attributes', 'tags'] as const).filter((field) => JSON.stringify(next[field]) !== JSON.stringify(current[field]));
    // The account row is locked by the event transaction, so the version cannot have moved.
    if (!(await updateResource(writer.trx, accountId, next, current.version, changed.includes('tags') ? current.tags : undefined))) {
      throw new Error(`resource ${id} changed during its own update`);
    }
    await writer.append('resource.updated', { resource: next, changed });
    return next;
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
    const record = view.get(id);
    return record && (JSON.parse(record.json.toString()) as Resource);
  }

  /** Every resource and the event cursor they correspond to, read in one transaction. */
  async snapshot(accountId: string): Promise<{ resources: Resource[]; cursor: number; oldestCursor: number }> {
    return this.db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => {
        const cursor = await this.events.newestId(accountId, trx);
        const resources = await allResources(trx, accountId);
        return { resources, cursor, oldestCursor: this.events.oldestCursor(cursor) };
      });
  }
}

function checkPrecondition(current: Resource, precondition: VersionPrecondition): void {
  if (precondition === undefined || precondition === '*' || precondition.includes(current.version)) return;
  throw new DomainError('precondition_failed', `The resource is at version ${current.version}`, [
    { path: '/version', message: `current version is ${current.version}`, currentVersion: current.version },
  ]);
}
