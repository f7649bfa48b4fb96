import { prepare, type PreparedQuery } from '../../storage/prepared.js';
import type { Executor } from '../../storage/schema.js';
import { ownBytes } from '../../platform/json-body.js';
import { resourceColumns, resourceJson, type ResourceColumns } from './resource-json.js';

export type ResourceType = 'sensor' | 'binary_sensor' | 'switch' | 'text';
export type ResourceState = number | string | boolean;

export interface Resource {
  id: string;
  name: string;
  type: ResourceType;
  state: ResourceState;
  attributes: Record<string, unknown>;
  tags: string[];
  version: number;
  createdAt: string;
  updatedAt: string;
}

const COLUMNS = ['id', 'name', 'type', 'state', 'attributes', 'tags', 'version', 'created_at', 'updated_at'] as const;

function toResource(row: ResourceColumns): Resource {
  return {
    id: row.id,
    name: row.name,
    type: row.type as ResourceType,
    state: JSON.parse(row.state) as ResourceState,
    attributes: JSON.parse(row.attributes) as Record<string, unknown>,
    tags: JSON.parse(row.tags) as string[],
    version: Number(row.version),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

async function writeTags(db: Executor, accountId: string, resourceId: string, tags: string[]): Promise<void> {
  if (tags.length === 0) return;
  await db
    .insertInto('resource_tags')
    .values(tags.map((tag) => ({ resource_id: resourceId, account_id: accountId, tag })))
    .execute();
}

export async function insertResource(db: Executor, accountId: string, resource: Resource, createdSeq: number): Promise<void> {
  await db
    .insertInto('resources')
    .values({ ...resourceColumns(resource), account_id: accountId, created_seq: createdSeq })
    .execute();
  await writeTags(db, accountId, resource.id, resource.tags);
}

const resourceById = prepare((db, p: { accountId: string; id: string }) =>
  db.selectFrom('resources').select(COLUMNS).where('id', '=', p.id).where('account_id', '=', p.accountId),
);

export async function findResource(db: Executor, accountId: string, id: string): Promise<Resource | undefined> {
  const row = await resourceById.first(db, { accountId, id });
  return row && toResource(row);
}

/** The resource as JSON (resourceJson, UTF-8) with its version, for the ETag. */
export async function findResourceJson(db: Executor, accountId: string, id: string): Promise<{ version: number; json: Buffer } | undefined> {
  const row = await resourceById.first(db, { accountId, id });
  return row && { version: Number(row.version), json: Buffer.from(resourceJson(row)) };
}

type StoredValues = { name: string; state: string; attributes: string; tags: string; version: number; updatedAt: string };

const updateIfVersion = prepare((db, p: StoredValues & { accountId: string; id: string; expectedVersion: number }) =>
  db
    .updateTable('resources')
    .set({ name: p.name, state: p.state, attributes: p.attributes, tags: p.tags, version: p.version, updated_at: p.updatedAt })
    .where('id', '=', p.id)
    .where('account_id', '=', p.accountId)
    .where('version', '=', p.expectedVersion),
);

/** Writes the new values if the stored version is still `expectedVersion`; false otherwise. */
export async function updateResource(db: Executor, accountId: string, resource: Resource, expectedVersion: number, tagsChanged: boolean): Promise<boolean> {
  const columns = resourceColumns(resource);
  const updated = await updateIfVersion.affected(db, {
    accountId,
    id: resource.id,
    expectedVersion,
    name: columns.name,
    state: columns.state,
    attributes: columns.attributes,
    tags: columns.tags,
    version: columns.version,
    updatedAt: columns.updated_at,
  });
  if (updated === 0) return false;
  if (tagsChanged) {
    await db.deleteFrom('resource_tags').where('resource_id', '=', resource.id).execute();
    await writeTags(db, accountId, resource.id, resource.tags);
  }
  return true;
}

export async function deleteResource(db: Executor, accountId: string, id: string): Promise<void> {
  // Tags go with it (foreign key cascade); deleting them first keeps SQLite without foreign keys right too.
  await db.deleteFrom('resource_tags').where('resource_id', '=', id).execute();
  await db.deleteFrom('resources').where('id', '=', id).where('account_id', '=', accountId).execute();
}

export interface ResourceQuery {
  type?: ResourceType;
  tags: string[];
  limit: number;
  offset: number;
}

type ListParams = { accountId: string; type: string; limit: number; offset: number } & Record<`tag${number}`, string>;
interface ListQueries {
  page: PreparedQuery<ListParams, ResourceColumns>;
  count: PreparedQuery<ListParams, { total: number }>;
}

/** One pair of prepared queries per shape of filter: with or without a type, and how many tags. */
const listQueries = new Map<string, ListQueries>();

function listQueriesFor(byType: boolean, tagCount: number): ListQueries {
  const shape = `${byType}:${tagCount}`;
  let queries = listQueries.get(shape);
  if (!queries) {
    const filtered = (db: Executor, p: ListParams) => {
      let base = db.selectFrom('resources').where('account_id', '=', p.accountId);
      if (byType) base = base.where('type', '=', p.type);
      for (let index = 0; index < tagCount; index++) {
        base = base.where('id', 'in', (eb) =>
          eb.selectFrom('resource_tags').select('resource_id').where('account_id', '=', p.accountId).where('tag', '=', p[`tag${index}`] as string),
        );
      }
      return base;
    };
    queries = {
      page: prepare((db, p: ListParams) => filtered(db, p).select(COLUMNS).orderBy('created_seq').limit(p.limit).offset(p.offset)),
      count: prepare((db, p: ListParams) => filtered(db, p).select((eb) => eb.fn.countAll<number>().as('total'))),
    };
    listQueries.set(shape, queries);
  }
  return queries;
}

/** A page of resources in creation order, each as JSON (resourceJson, UTF-8), and how many match in all. */
export async function listResourcesJson(db: Executor, accountId: string, query: ResourceQuery): Promise<{ data: Buffer[]; total: number }> {
  const { page, count } = listQueriesFor(query.type !== undefined, query.tags.length);
  const params = { accountId, type: query.type ?? '', limit: query.limit, offset: query.offset } as ListParams;
  query.tags.forEach((tag, index) => (params[`tag${index}`] = tag));
  const [rows, counted] = await Promise.all([page.rows(db, params), count.first(db, params)]);
  return { data: rows.map((row) => Buffer.from(resourceJson(row))), total: Number(counted?.total ?? 0) };
}

/** A resource as the in-memory read model keeps it: what lists filter and order on, and its API JSON. */
export interface ResourceRecord {
  id: string;
  type: ResourceType;
  tags: string[];
  version: number;
  /** The id of its resource.created event: creation order. */
  createdSeq: number;
  /** Its API JSON, UTF-8. */
  json: Buffer;
}

/** The account's first `limit` resources in creation order, as records. */
export async function resourceRecords(db: Executor, accountId: string, limit: number): Promise<ResourceRecord[]> {
  const rows = await db
    .selectFrom('resources')
    .select([...COLUMNS, 'created_seq'])
    .where('account_id', '=', accountId)
    .orderBy('created_seq')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    id: row.id,
    type: row.type as ResourceType,
    tags: JSON.parse(row.tags) as string[],
    version: Number(row.version),
    createdSeq: Number(row.created_seq),
    json: ownBytes(resourceJson(row)),
  }));
}

/** Every resource of the account, in creation order (snapshots). */
export async function allResources(db: Executor, accountId: string): Promise<Resource[]> {
  const rows = await db.selectFrom('resources').select(COLUMNS).where('account_id', '=', accountId).orderBy('created_seq').execute();
  return rows.map(toResource);
}
