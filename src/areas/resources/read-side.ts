// The resources' read side: what is served as prepared JSON (a resource, a page of them) from the
// accounts kept in memory, or from storage while an account is not (yet) held; and the snapshot
// of every resource with its cursor. The service (service.ts) writes; this reads.
import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';
import { notFound } from '../../domain-errors.js';
import type { JsonParts } from '../../platform/json-body.js';
import type { EventReads } from '../events/read-side.js';
import type { LoadResources, ResourceReadModel } from './read-model.js';
import type { Resource } from './schemas.js';
import { allResources, countResources, findResourceJson, listResourcesJson, resourceCreationOrder, resourceRecords, type ResourceQuery } from './store.js';

export class ResourceReads {
  /** Each account's resources in memory, kept current from its commits. */
  readonly views: ResourceReadModel;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly events: EventReads,
    readModel: (load: LoadResources) => ResourceReadModel,
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
