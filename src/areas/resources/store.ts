import { sql, type RawBuilder } from 'kysely';
import { prepare, type PreparedQuery } from '../../storage/prepared.js';
import type { Executor } from '../../storage/schema.js';
import { rowsOf, type JoinedRows, type ValueColumn } from '../../storage/postgres-writes.js';
import { changeCounts, countsOf } from './count-store.js';
import { RESOURCE_COLUMNS as COLUMNS, resourceColumns, resourceJson, resourceOf, type ResourceColumns } from './resource-json.js';
import type { Resource, ResourceType } from './schemas.js';

/** The service imports them from here. */
export type { Resource, ResourceState, ResourceType } from './schemas.js';

/** A row per tag, with the resource's place in creation order so that a tag's list is one index range. */
async function writeTags(db: Executor, accountId: string, resourceId: string, tags: string[], createdSeq: number | RawBuilder<number>): Promise<void> {
  if (tags.length === 0) return;
  await db
    .insertInto('resource_tags')
    .values(tags.map((tag) => ({ resource_id: resourceId, account_id: accountId, tag, created_seq: createdSeq })))
    .execute();
}

/** The resource's row and its tags' rows; the caller changes the counts (`changeCounts`). */
export async function insertResource(db: Executor, accountId: string, resource: Resource, createdSeq: number): Promise<void> {
  await db
    .insertInto('resources')
    .values({ ...resourceColumns(resource), account_id: accountId, created_seq: createdSeq })
    .execute();
  await writeTags(db, accountId, resource.id, resource.tags, createdSeq);
}

/** Stored columns of the resources, each as a text column for `rowsOf`. */
function textColumns(resources: readonly Resource[], names: ReadonlyArray<keyof ResourceColumns>): Record<string, ValueColumn> {
  const columns = resources.map(resourceColumns);
  return Object.fromEntries(names.map((name) => [name, { values: columns.map((column) => String(column[name])), type: 'text' }]));
}

/**
 * PostgreSQL: the statement part that inserts new resources and their tags' rows, joined to the
 * events announcing them (storage/postgres-writes.ts): each one's `created_seq` is the id of its
 * event, the statement's events being exactly their resource.created events, in order.
 */
export function insertResourcesJoined(accountId: string, resources: readonly Resource[]): JoinedRows[] {
  const count = resources.length;
  const rows = rowsOf('n', {
    ...textColumns(resources, ['id', 'name', 'type', 'state', 'attributes', 'tags', 'created_at']),
    position: { values: resources.map((_resource, index) => index + 1), type: 'integer' },
  });
  const inserted: JoinedRows = (written) => sql`
    insert into resources (id, account_id, name, type, state, attributes, tags, version, created_seq, created_at, updated_at)
    select n.id, ${accountId}, n.name, n.type, n.state, n.attributes, n.tags, 1, w.event_seq - ${count} + n.position, n.created_at, n.created_at
    from ${written} as w, ${rows}`;
  const tagged = resources.flatMap((resource, index) => resource.tags.map((tag) => ({ id: resource.id, tag, position: index + 1 })));
  if (tagged.length === 0) return [inserted];
  const tags = rowsOf('t', {
    id: { values: tagged.map((row) => row.id), type: 'text' },
    tag: { values: tagged.map((row) => row.tag), type: 'text' },
    position: { values: tagged.map((row) => row.position), type: 'integer' },
  });
  // The tags' foreign key to their resource is checked at the end of the statement, once both are in.
  return [
    inserted,
    (written) => sql`
      insert into resource_tags (resource_id, account_id, tag, created_seq)
      select t.id, ${accountId}, t.tag, w.event_seq - ${count} + t.position
      from ${written} as w, ${tags}`,
  ];
}

const resourceById = prepare((db, p: { accountId: string; id: string }) =>
  db.selectFrom('resources').select(COLUMNS).where('id', '=', p.id).where('account_id', '=', p.accountId),
);

export async function findResource(db: Executor, accountId: string, id: string): Promise<Resource | undefined> {
  const row = await resourceById.first(db, { accountId, id });
  return row && resourceOf(row);
}

/** The account's resources with these ids (those that exist), by id; one query. */
export async function findResources(db: Executor, accountId: string, ids: readonly string[]): Promise<Map<string, Resource>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('resources')
    .select(COLUMNS)
    .where('account_id', '=', accountId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Map(rows.map((row) => [row.id, resourceOf(row)]));
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

/** Writes the new values if the stored version is still `expectedVersion`; false otherwise. `previousTags` when the tags changed. */
export async function updateResource(
  db: Executor,
  accountId: string,
  resource: Resource,
  expectedVersion: number,
  previousTags: readonly string[] | undefined,
): Promise<boolean> {
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
  if (previousTags) {
    await db.deleteFrom('resource_tags').where('resource_id', '=', resource.id).execute();
    await writeTags(db, accountId, resource.id, resource.tags, sql<number>`(select created_seq from resources where id = ${resource.id})`);
    const removed = previousTags.filter((tag) => !resource.tags.includes(tag));
    const added = resource.tags.filter((tag) => !previousTags.includes(tag));
    await changeCounts(db, accountId, [
      ...removed.map((tag) => ({ kind: 'tag' as const, name: tag, delta: -1 })),
      ...added.map((tag) => ({ kind: 'tag' as const, name: tag, delta: 1 })),
    ]);
  }
  return true;
}

/**
 * PostgreSQL: the statement that writes updated resources whose tags did not change, joined to the
 * events announcing them (storage/postgres-writes.ts), so that it runs with them or not at all.
 * One entry per resource: its newest values.
 */
export function updateResourcesJoined(accountId: string, resources: readonly Resource[]): JoinedRows {
  const updates = rowsOf('u', {
    ...textColumns(resources, ['id', 'name', 'state', 'attributes', 'updated_at']),
    version: { values: resources.map((resource) => resource.version), type: 'integer' },
  });
  return (written) => sql`
    update resources as r
    set name = u.name, state = u.state, attributes = u.attributes, version = u.version, updated_at = u.updated_at
    from ${written}, ${updates}
    where r.account_id = ${accountId} and r.id = u.id`;
}

/** Deletes the resource as the caller read it in this transaction (its type and tags leave the counts). */
export async function deleteResource(db: Executor, accountId: string, resource: Pick<Resource, 'id' | 'type' | 'tags'>): Promise<void> {
  // Tags go with it (foreign key cascade); deleting them first keeps SQLite without foreign keys right too.
  await db.deleteFrom('resource_tags').where('resource_id', '=', resource.id).execute();
  const deleted = await db.deleteFrom('resources').where('id', '=', resource.id).where('account_id', '=', accountId).executeTakeFirst();
  if (Number(deleted.numDeletedRows) > 0) await changeCounts(db, accountId, countsOf(resource.type, resource.tags, -1));
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
  /** A page past the first: without tags, it reads the index alone up to its first row. */
  deepPage: PreparedQuery<ListParams, ResourceColumns>;
  /** Counted over the rows; only for filters whose count is not kept (a type with a tag, several tags). */
  count: PreparedQuery<ListParams, { total: number }>;
}

/** One set of prepared queries per shape of filter: with or without a type, and how many tags. */
const listQueries = new Map<string, ListQueries>();

function listQueriesFor(byType: boolean, tagCount: number): ListQueries {
  const shape = `${byType}:${tagCount}`;
  let queries = listQueries.get(shape);
  if (queries) return queries;
  if (tagCount === 0) {
    const filtered = (db: Executor, p: ListParams) => {
      const base = db.selectFrom('resources').where('account_id', '=', p.accountId);
      return byType ? base.where('type', '=', p.type) : base;
    };
    queries = {
      page: prepare((db, p: ListParams) => filtered(db, p).select(COLUMNS).orderBy('created_seq').limit(p.limit).offset(p.offset)),
      // The first row of the page found on the index of (account_id[, type], created_seq) alone,
      // then only the page's rows read: the skipped rows themselves are never fetched.
      deepPage: prepare((db, p: ListParams) =>
        filtered(db, p)
          .select(COLUMNS)
          .where('created_seq', '>=', (eb) => {
            const skipped = eb.selectFrom('resources as skipped').select('skipped.created_seq').where('skipped.account_id', '=', p.accountId);
            return (byType ? skipped.where('skipped.type', '=', p.type) : skipped).orderBy('skipped.created_seq').limit(1).offset(p.offset);
          })
          .orderBy('created_seq')
          .limit(p.limit),
      ),
      count: prepare((db, p: ListParams) => filtered(db, p).select((eb) => eb.fn.countAll<number>().as('total'))),
    };
  } else {
    // Led by the first tag's rows, in creation order on the index of (account_id, tag, created_seq);
    // a type or further tags are checked on each of them.
    const filtered = (db: Executor, p: ListParams) => {
      let base = db
        .selectFrom('resource_tags as led')
        .innerJoin('resources', 'resources.id', 'led.resource_id')
        .where('led.account_id', '=', p.accountId)
        .where('led.tag', '=', p.tag0 as string);
      if (byType) base = base.where('resources.type', '=', p.type);
      for (let index = 1; index < tagCount; index++) {
        base = base.where((eb) =>
          eb.exists(
            eb
              .selectFrom('resource_tags as also')
              .select('also.tag')
              .whereRef('also.resource_id', '=', 'resources.id')
              .where('also.tag', '=', p[`tag${index}`] as string),
          ),
        );
      }
      return base;
    };
    const page = prepare((db, p: ListParams) => filtered(db, p).select(COLUMNS).orderBy('led.created_seq').limit(p.limit).offset(p.offset));
    queries = {
      page,
      // One tag alone: its index answers where the page starts, as above.
      deepPage:
        byType || tagCount > 1
          ? page
          : prepare((db, p: ListParams) =>
              filtered(db, p)
                .select(COLUMNS)
                .where('led.created_seq', '>=', (eb) =>
                  eb
                    .selectFrom('resource_tags as skipped')
                    .select('skipped.created_seq')
                    .where('skipped.account_id', '=', p.accountId)
                    .where('skipped.tag', '=', p.tag0 as string)
                    .orderBy('skipped.created_seq')
                    .limit(1)
                    .offset(p.offset),
                )
                .orderBy('led.created_seq')
                .limit(p.limit),
            ),
      count: prepare((db, p: ListParams) => filtered(db, p).select((eb) => eb.fn.countAll<number>().as('total'))),
    };
  }
  listQueries.set(shape, queries);
  return queries;
}

const keptCount = prepare((db, p: { accountId: string; kind: string; name: string }) =>
  db
    .selectFrom('resource_counts')
    .select('count')
    .where('account_id', '=', p.accountId)
    .where('kind', '=', p.kind as '')
    .where('name', '=', p.name),
);

/** How many resources match: a kept count (the whole account, a type, a tag) when there is one, else counted. */
async function countMatching(db: Executor, accountId: string, query: ResourceQuery, queries: ListQueries, params: ListParams): Promise<number> {
  const { type, tags } = query;
  const kept =
    tags.length === 0
      ? type === undefined
        ? { kind: '', name: '' }
        : { kind: 'type', name: type }
      : tags.length === 1 && type === undefined
        ? { kind: 'tag', name: tags[0]! }
        : undefined;
  if (kept) return Number((await keptCount.first(db, { accountId, ...kept }))?.count ?? 0);
  return Number((await queries.count.first(db, params))?.total ?? 0);
}

function listParamsOf(accountId: string, query: ResourceQuery): ListParams {
  const params = { accountId, type: query.type ?? '', limit: query.limit, offset: query.offset } as ListParams;
  for (const [index, tag] of query.tags.entries()) params[`tag${index}`] = tag;
  return params;
}

/** How many of the account's resources match the query's filters. */
export async function countResources(db: Executor, accountId: string, query: ResourceQuery): Promise<number> {
  const queries = listQueriesFor(query.type !== undefined, query.tags.length);
  const params = listParamsOf(accountId, query);
  return countMatching(db, accountId, query, queries, params);
}

/** A page of the whole account from a known first `created_seq` (the read model's creation order). */
const pageFromSeq = prepare((db, p: { accountId: string; startSeq: number; limit: number }) =>
  db.selectFrom('resources').select(COLUMNS).where('account_id', '=', p.accountId).where('created_seq', '>=', p.startSeq).orderBy('created_seq').limit(p.limit),
);

/**
 * A page of resources in creation order, each as JSON (resourceJson, UTF-8), and how many match in
 * all. `startSeq`: for the whole account (no filter), the `created_seq` at `query.offset`, when
 * known; `knownTotal`: how many match, when known (not counted again).
 */
export async function listResourcesJson(
  db: Executor,
  accountId: string,
  query: ResourceQuery,
  startSeq?: number,
  knownTotal?: number,
): Promise<{ data: Buffer[]; total: number }> {
  const queries = listQueriesFor(query.type !== undefined, query.tags.length);
  const params = listParamsOf(accountId, query);
  const page =
    startSeq !== undefined
      ? pageFromSeq.rows(db, { accountId, startSeq, limit: query.limit })
      : (query.offset === 0 ? queries.page : queries.deepPage).rows(db, params);
  const [rows, total] = await Promise.all([page, knownTotal ?? countMatching(db, accountId, query, queries, params)]);
  return { data: rows.map((row) => Buffer.from(resourceJson(row))), total };
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
  /** When `json` is a part of a buffer shared by the records read together: that buffer's account. */
  block?: JsonBlock;
}

/** A buffer holding the JSON of several records: `bytes` in all, of which `held` records are still held. */
export interface JsonBlock {
  readonly bytes: number;
  held: number;
}

/** The account's first `limit` resources in creation order (created after `afterSeq`), as records. */
export async function resourceRecords(db: Executor, accountId: string, limit: number, afterSeq = 0): Promise<ResourceRecord[]> {
  const rows = await db
    .selectFrom('resources')
    .select([...COLUMNS, 'created_seq'])
    .where('account_id', '=', accountId)
    .where('created_seq', '>', afterSeq)
    .orderBy('created_seq')
    .limit(limit)
    .execute();
  // One buffer for the chunk's JSON: a buffer of its own per resource (100,000 of them for a large
  // account) was a large share of reading it, and more for the garbage collector (bench/HISTORY.md,
  // "Large accounts").
  const texts = rows.map((row) => resourceJson(row));
  const bytes = Buffer.allocUnsafeSlow(texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0));
  const block: JsonBlock = { bytes: bytes.length, held: rows.length };
  let offset = 0;
  return rows.map((row, index) => {
    const start = offset;
    offset += bytes.write(texts[index]!, start);
    return {
      id: row.id,
      type: row.type as ResourceType,
      tags: JSON.parse(row.tags) as string[],
      version: Number(row.version),
      createdSeq: Number(row.created_seq),
      json: bytes.subarray(start, offset),
      block,
    };
  });
}

const creationOrder = prepare((db, p: { accountId: string; limit: number }) =>
  db.selectFrom('resources').select('created_seq').where('account_id', '=', p.accountId).orderBy('created_seq').limit(p.limit),
);

/** The `created_seq` of the account's first `limit` resources in creation order: its index alone. */
export async function resourceCreationOrder(db: Executor, accountId: string, limit: number): Promise<number[]> {
  return (await creationOrder.rows(db, { accountId, limit })).map((row) => Number(row.created_seq));
}

/** Every resource of the account, in creation order (snapshots). */
export async function allResources(db: Executor, accountId: string): Promise<Resource[]> {
  const rows = await db.selectFrom('resources').select(COLUMNS).where('account_id', '=', accountId).orderBy('created_seq').execute();
  return rows.map(resourceOf);
}
