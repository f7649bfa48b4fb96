// The rows of idempotent_requests: a request's outcome under its key (migration 0013).
import type { Executor, IdempotentRequestsTable } from '../storage/schema.js';
import { sql } from 'kysely';
import { prepare } from '../storage/prepared.js';
import { rowsOf, type JoinedRows } from '../storage/postgres-writes.js';

export type IdempotentRequestRow = IdempotentRequestsTable;

// On the path of every request with a key: compiled once (storage/prepared.ts).
const selectOutcome = prepare((db, p: { scope: string; key: string }) =>
  db.selectFrom('idempotent_requests').selectAll().where('scope', '=', p.scope).where('key', '=', p.key),
);
const insertOutcomeRow = prepare((db, p: IdempotentRequestRow) =>
  db
    .insertInto('idempotent_requests')
    .values({
      scope: p.scope,
      key: p.key,
      fingerprint: p.fingerprint,
      status: p.status,
      headers: p.headers,
      body: p.body,
      sealed: p.sealed,
      created_at: p.created_at,
    })
    .onConflict((conflict) => conflict.columns(['scope', 'key']).doNothing()),
);

/** The outcomes stored under these keys (those that are), in one query. */
export async function findOutcomes(db: Executor, keys: ReadonlyArray<{ scope: string; key: string }>): Promise<IdempotentRequestRow[]> {
  if (keys.length === 1) return selectOutcome.rows(db, keys[0]!);
  return db
    .selectFrom('idempotent_requests')
    .selectAll()
    .where((eb) =>
      eb(
        eb.refTuple('scope', 'key'),
        'in',
        keys.map(({ scope, key }) => eb.tuple(scope, key)),
      ),
    )
    .execute();
}

/** Inserts the outcomes, each unless one is stored under its key; how many were inserted. */
export async function insertOutcomes(db: Executor, rows: readonly IdempotentRequestRow[]): Promise<number> {
  if (rows.length === 1) return insertOutcomeRow.affected(db, rows[0]!);
  const result = await db
    .insertInto('idempotent_requests')
    .values([...rows])
    .onConflict((conflict) => conflict.columns(['scope', 'key']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n);
}

/** PostgreSQL: the outcomes inserted by a part of an account write's statement (storage/postgres-writes.ts); a key stored already fails the statement. */
export function insertOutcomesJoined(rows: readonly IdempotentRequestRow[]): JoinedRows {
  const text = (pick: (row: IdempotentRequestRow) => string) => ({ values: rows.map(pick), type: 'text' as const });
  const integer = (pick: (row: IdempotentRequestRow) => number) => ({ values: rows.map(pick), type: 'integer' as const });
  const values = rowsOf('o', {
    scope: text((row) => row.scope),
    key: text((row) => row.key),
    fingerprint: text((row) => row.fingerprint),
    status: integer((row) => row.status),
    headers: text((row) => row.headers),
    body: text((row) => row.body),
    sealed: integer((row) => row.sealed),
    created_at: text((row) => row.created_at),
  });
  return (written) => sql`
    insert into idempotent_requests (scope, key, fingerprint, status, headers, body, sealed, created_at)
    select o.scope, o.key, o.fingerprint, o.status, o.headers, o.body, o.sealed, o.created_at from ${written}, ${values}`;
}

export async function deleteOutcome(db: Executor, scope: string, key: string): Promise<void> {
  await db.deleteFrom('idempotent_requests').where('scope', '=', scope).where('key', '=', key).execute();
}

/** Deletes up to `limit` outcomes stored before `before`, oldest first, in one statement; how many it deleted. */
export async function deleteOutcomesBefore(db: Executor, before: string, limit: number): Promise<number> {
  const oldest = db.selectFrom('idempotent_requests').select(['scope', 'key']).where('created_at', '<', before).orderBy('created_at').limit(limit);
  const result = await db
    .deleteFrom('idempotent_requests')
    .where((eb) => eb(eb.refTuple('scope', 'key'), 'in', oldest.$asTuple('scope', 'key')))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The sealed outcomes, a page at a time after (scope, key), for a change of the secrets key. */
export async function sealedOutcomes(
  db: Executor,
  after: { scope: string; key: string } | undefined,
  limit: number,
): Promise<Array<{ scope: string; key: string; body: string }>> {
  let query = db.selectFrom('idempotent_requests').select(['scope', 'key', 'body']).where('sealed', '=', 1);
  if (after) query = query.where((eb) => eb.or([eb('scope', '>', after.scope), eb.and([eb('scope', '=', after.scope), eb('key', '>', after.key)])]));
  return query.orderBy('scope').orderBy('key').limit(limit).execute();
}

export async function updateSealedBody(db: Executor, scope: string, key: string, body: string): Promise<void> {
  await db.updateTable('idempotent_requests').set({ body }).where('scope', '=', scope).where('key', '=', key).execute();
}
