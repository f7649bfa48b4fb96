// The counts of an account's resources kept per type and tag (migration 0010), changed in the
// transaction of the write that changes the resources.
import { prepare, type PreparedQuery } from '../../storage/prepared.js';
import type { Executor } from '../../storage/schema.js';

type CountChange = { kind: 'type' | 'tag'; name: string; delta: number } | { kind: ''; name: ''; delta: number };
type CountParams = { accountId: string } & Record<`kind${number}` | `name${number}`, string> & Record<`delta${number}`, number>;

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

/** Adds each change to the account's kept counts (migration 0010), in the caller's transaction; one statement. */
export async function changeCounts(db: Executor, accountId: string, changes: CountChange[]): Promise<void> {
  if (changes.length === 0) return;
  const params = { accountId } as CountParams;
  changes.forEach((change, index) => {
    params[`kind${index}`] = change.kind;
    params[`name${index}`] = change.name;
    params[`delta${index}`] = change.delta;
  });
  await countUpsert(changes.length).execute(db, params);
}

/** The counts a resource of `type` with `tags` takes part in, each changed by `delta`. */
export const countsOf = (type: string, tags: readonly string[], delta: number): CountChange[] => [
  { kind: '', name: '', delta },
  { kind: 'type', name: type, delta },
  ...tags.map((tag) => ({ kind: 'tag' as const, name: tag, delta })),
];
