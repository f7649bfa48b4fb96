import type { Executor } from '../../storage/schema.js';

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

type Row = { id: string; name: string; type: string; state: string; attributes: string; tags: string; version: number; created_at: string; updated_at: string };

function toResource(row: Row): Resource {
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
    .values({
      id: resource.id,
      account_id: accountId,
      name: resource.name,
      type: resource.type,
      state: JSON.stringify(resource.state),
      attributes: JSON.stringify(resource.attributes),
      tags: JSON.stringify(resource.tags),
      version: resource.version,
      created_seq: createdSeq,
      created_at: resource.createdAt,
      updated_at: resource.updatedAt,
    })
    .execute();
  await writeTags(db, accountId, resource.id, resource.tags);
}

export async function findResource(db: Executor, accountId: string, id: string): Promise<Resource | undefined> {
  const row = await db.selectFrom('resources').select(COLUMNS).where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  return row && toResource(row);
}

/** Writes the new values if the stored version is still `expectedVersion`; false otherwise. */
export async function updateResource(db: Executor, accountId: string, resource: Resource, expectedVersion: number, tagsChanged: boolean): Promise<boolean> {
  const result = await db
    .updateTable('resources')
    .set({
      name: resource.name,
      state: JSON.stringify(resource.state),
      attributes: JSON.stringify(resource.attributes),
      tags: JSON.stringify(resource.tags),
      version: resource.version,
      updated_at: resource.updatedAt,
    })
    .where('id', '=', resource.id)
    .where('account_id', '=', accountId)
    .where('version', '=', expectedVersion)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return false;
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

export async function listResources(db: Executor, accountId: string, query: ResourceQuery): Promise<{ data: Resource[]; total: number }> {
  let base = db.selectFrom('resources').where('account_id', '=', accountId);
  if (query.type) base = base.where('type', '=', query.type);
  for (const tag of query.tags) {
    base = base.where('id', 'in', (eb) =>
      eb.selectFrom('resource_tags').select('resource_id').where('account_id', '=', accountId).where('tag', '=', tag),
    );
  }
  const [rows, count] = await Promise.all([
    base.select(COLUMNS).orderBy('created_seq').limit(query.limit).offset(query.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { data: rows.map(toResource), total: Number(count.total) };
}

/** Every resource of the account, in creation order (snapshots). */
export async function allResources(db: Executor, accountId: string): Promise<Resource[]> {
  const rows = await db.selectFrom('resources').select(COLUMNS).where('account_id', '=', accountId).orderBy('created_seq').execute();
  return rows.map(toResource);
}
