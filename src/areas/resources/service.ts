import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';
import type { Clock } from '../../platform/clock.js';
import { notFound } from '../../domain-errors.js';
import type { AccountWrite, AccountWrites, Outcome, Submit } from '../../account-writes/pipeline.js';
import type { ResourceReadModel } from './read-model.js';
import type { OutcomeRecord } from '../../storage/transaction.js';
import {
  checkUpdateInput,
  validateFields,
  type CreateResourceInput,
  type ResourceUpdate,
  type UpdateResourceInput,
  type VersionPrecondition,
} from './rules.js';
import { ResourceWrites } from './writes.js';

export { readingOf, type StateReading } from './writes.js';
import { findResource, type Resource, type ResourceState, type ResourceType } from './store.js';

export type { Resource, ResourceState, ResourceType };
export { NAME_MAX, TAGS_MAX } from './schemas.js';
export {
  stateProblem,
  type CreateResourceInput,
  type ResourceUpdate,
  type UpdateResourceInput,
  type VersionPrecondition,
} from './rules.js';

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

  async create(accountId: string, input: CreateResourceInput, outcome?: OutcomeRecord): Promise<Resource> {
    // Refused before a write starts.
    const name = this.checkCreate(input);
    return this.pipeline.transaction(accountId, (write) => this.writes.create(write, input, name), outcome);
  }

  async get(accountId: string, id: string): Promise<Resource> {
    const resource = await findResource(this.db, accountId, id);
    if (!resource) throw notFound('Resource');
    return resource;
  }

  async update(accountId: string, id: string, input: UpdateResourceInput, precondition: VersionPrecondition, outcome?: OutcomeRecord): Promise<Resource> {
    checkUpdateInput(input);
    return this.submitUpdate(accountId, { id, input, precondition }, 0, outcome);
  }

  /** An update inside an account's write the caller holds (a schedule's run). */
  async updateIn(write: AccountWrite, id: string, input: UpdateResourceInput): Promise<Resource> {
    return this.writes.update(write, { id, input, precondition: undefined });
  }

  /** Refuses, before a write starts, a creation whose fields are wrong; returns its trimmed name. */
  checkCreate(input: CreateResourceInput): string {
    return validateFields(input, input.type, input.state) ?? '';
  }

  /** Refuses, before a write starts, an update that cannot be right whatever the resource is. */
  checkUpdate(input: UpdateResourceInput): void {
    checkUpdateInput(input);
    validateFields(input, 'text', undefined);
  }

  /** Creations, updates and deletions inside an account's write the caller holds (a batch), each as its own route does it. */
  readonly within = {
    /** Runs of creations, in order (a run is one statement with its events on PostgreSQL). */
    createAll: (write: AccountWrite, inputs: readonly CreateResourceInput[]): Promise<Resource[]> =>
      this.writes.createAll(
        write,
        inputs.map((input) => ({ input, name: this.checkCreate(input) })),
      ),
    /** Runs of updates: what each answers, decided in order; the caller rolls back on a refusal. */
    update: (write: AccountWrite, updates: readonly ResourceUpdate[]): Promise<Outcome<Resource>[]> => this.writes.updateAll(write, updates),
    delete: (write: AccountWrite, id: string, precondition: VersionPrecondition): Promise<void> => this.writes.delete(write, id, precondition),
  };

  async delete(accountId: string, id: string, precondition: VersionPrecondition, outcome?: OutcomeRecord): Promise<void> {
    await this.pipeline.transaction(accountId, (write) => this.writes.delete(write, id, precondition), outcome);
  }
}
