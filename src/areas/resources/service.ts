import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';
import type { Clock } from '../../platform/clock.js';
import { badRequest, invalidField, notFound } from '../../domain-errors.js';
import type { AccountWrite, AccountWrites, Submit } from '../../account-writes/pipeline.js';
import type { ResourceReadModel } from './read-model.js';
import { validateFields, type CreateResourceInput, type ResourceUpdate, type UpdateResourceInput, type VersionPrecondition } from './rules.js';
import { ResourceWrites } from './writes.js';
import { findResource, type Resource, type ResourceState, type ResourceType } from './store.js';

export type { Resource, ResourceState, ResourceType };
export { NAME_MAX, TAGS_MAX, stateProblem, type CreateResourceInput, type UpdateResourceInput, type VersionPrecondition } from './rules.js';

export class ResourcesService {
  private readonly writes: ResourceWrites;
  private readonly submitUpdate: Submit<ResourceUpdate, Resource>;

  constructor(
    private readonly db: Kysely<Database>,
    clock: Clock,
    private readonly pipeline: AccountWrites,
    /** The accounts' resources in memory (ResourceReads keeps them): writes are decided against them when current. */
    views: ResourceReadModel,
  ) {
    this.writes = new ResourceWrites(clock, views);
    this.submitUpdate = pipeline.kind(this.writes.updates);
  }

  async create(accountId: string, input: CreateResourceInput): Promise<Resource> {
    // Refused before a write starts.
    const name = validateFields(input, input.type, input.state) ?? '';
    return this.pipeline.transaction(accountId, (write) => this.writes.create(write, input, name));
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
    return this.submitUpdate(accountId, { id, input, precondition });
  }

  /** An update inside an account's write the caller holds (a schedule's run). */
  async updateIn(write: AccountWrite, id: string, input: UpdateResourceInput): Promise<Resource> {
    return this.writes.update(write, { id, input, precondition: undefined });
  }

  async delete(accountId: string, id: string, precondition: VersionPrecondition): Promise<void> {
    await this.pipeline.transaction(accountId, (write) => this.writes.delete(write, id, precondition));
  }
}
