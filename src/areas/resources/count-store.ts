// The counts of an account's resources kept per type and tag (migration 0010), changed in the
// transaction of the write that changes the resources.
import { prepare, type PreparedQuery } from '../../storage/prepared.js';
import type { Executor } from '../../storage/schema.js';

type CountChange = { kind: 'type' | 'tag'; name: string; delta: number } | { kind: ''; name: ''; delta: number };
type CountParams = { accountId: string } & Record<`kind${number}` | `name${number}`, string> & Record<`delta${number}`, number>;

/** The most counts one upsert changes (a batch's creations may change thousands): bounds the statements compiled, and their parameters. */
const COUNTS_PER_STATEMENT = 100;

/** One upsert per number of counts changed, compiled once each. */
const countUpserts = new Map<number, PreparedQuery<CountParams, unknown>>();

function countUpsert(rows: number): PreparedQuery<CountParams, unknown> {
  let query = countUpserts.get(rows);
  if (!query) {
    query = prepare((db, p: CountParams) =>
      db
        .insertInto('resource_counts')
        .values(
          Array.from({ length: rows }, (_, index) => ({
            account_id: p.accountId,
            kind: p[`kind${index}`] as '',
            name: p[`name${index}`] as string,
            count: p[`delta${index}`] as number,
          })),
        )
        .onConflict((conflict) =>
          conflict.columns(['account_id', 'kind', 'name']).doUpdateSet((eb) => ({ count: eb('resource_counts.count', '+', eb.ref('excluded.count')) })),
        ),
    );
    countUpserts.set(rows, query);
  }
  return query;
}

/** Adds each change to the account's kept counts (migration 0010), in the caller's transaction; a statement per COUNTS_PER_STATEMENT counts. */
export async function changeCounts(db: Executor, accountId: string, listed: CountChange[]): Promise<void> {
  // One row per count: an upsert may not change a row twice (PostgreSQL refuses it).
  const merged = new Map<string, CountChange>();
  for (const change of listed) {
    const key = `${change.kind}\u0000${change.name}`;
    const seen = merged.get(key);
    merged.set(key, seen ? { ...seen, delta: seen.delta + change.delta } : change);
  }
  const changes = [...merged.values()].filter((change) => change.delta !== 0);
  for (let start = 0; start < changes.length; start += COUNTS_PER_STATEMENT) {
    const part = changes.slice(start, start + COUNTS_PER_STATEMENT);
    const params = { accountId } as CountParams;
    part.forEach((change, index) => {
      params[`kind${index}`] = change.kind;
      params[`name${index}`] = change.name;
      params[`delta${index}`] = change.delta;
    });
    await countUpsert(part.length).execute(db, params);
  }
}

/** The counts a resource of `type` with `tags` takes part in, each changed by `delta`. */
export const countsOf = (type: string, tags: readonly string[], delta: number): CountChange[] => [
  { kind: '', name: '', delta },
  { kind: 'type', name: type, delta },
  ...tags.map((tag) => ({ kind: 'tag' as const, name: tag, delta })),
];
