// Prepared queries (src/storage/prepared.ts) on SQLite: inside a transaction they run on the
// connection directly, past Kysely's executor; outside one they go through it (a statement outside
// a transaction must first commit an open group). Either way the results, the errors and the
// transaction's outcome are the same.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { prepare } from '../../src/storage/prepared.js';
import type { Executor } from '../../src/storage/schema.js';

describe('prepared queries on SQLite', () => {
  let directory: string;
  let storage: Storage;
  let db: Kysely<any>;

  const insertItem = prepare((exec: Executor, p: { name: string; size: number }) =>
    (exec as unknown as Kysely<any>).insertInto('items').values({ name: p.name, size: p.size }),
  );
  const growItem = prepare((exec: Executor, p: { name: string; by: number }) =>
    (exec as unknown as Kysely<any>)
      .updateTable('items')
      .set((eb) => ({ size: eb('size', '+', p.by) }))
      .where('name', '=', p.name)
      .returning('size'),
  );
  const asExecutor = (exec: Kysely<any>) => exec as unknown as Executor;

  beforeEach(async () => {
    directory = mkdtempSync(join(tmpdir(), 'devdata-prepared-'));
    storage = openStorage(`sqlite:${join(directory, 'test.db')}`);
    db = storage.db as unknown as Kysely<any>;
    await sql`create table items (name text primary key, size integer not null)`.execute(db);
  });

  afterEach(async () => {
    await storage.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('runs a transaction’s statements without Kysely’s executor, in order with the builder’s', async () => {
    const sizes = await db.transaction().execute(async (trx) => {
      const throughKysely = vi.spyOn(trx, 'executeQuery');
      await insertItem.affected(asExecutor(trx), { name: 'a', size: 1 });
      const grown = await growItem.first(asExecutor(trx), { name: 'a', by: 2 });
      expect(throughKysely).not.toHaveBeenCalled();
      // A builder query in the same transaction sees what the direct statements wrote, and they see its.
      await trx.updateTable('items').set({ size: 10 }).where('name', '=', 'a').execute();
      const after = await growItem.first(asExecutor(trx), { name: 'a', by: 1 });
      return [grown, after];
    });
    expect(sizes).toEqual([{ size: 3 }, { size: 11 }]);
  });

  it('goes through Kysely outside a transaction', async () => {
    const throughKysely = vi.spyOn(db, 'executeQuery');
    expect(await insertItem.affected(asExecutor(db), { name: 'b', size: 1 })).toBe(1);
    expect(throughKysely).toHaveBeenCalledTimes(1);
  });

  it('rejects with SQLite’s own error and rolls back only the failing transaction', async () => {
    await insertItem.affected(asExecutor(db), { name: 'taken', size: 1 });
    const results = await Promise.allSettled([
      db.transaction().execute(async (trx) => insertItem.affected(asExecutor(trx), { name: 'c', size: 1 })),
      db.transaction().execute(async (trx) => {
        await insertItem.affected(asExecutor(trx), { name: 'd', size: 1 });
        return insertItem.affected(asExecutor(trx), { name: 'taken', size: 2 });
      }),
      db.transaction().execute(async (trx) => insertItem.affected(asExecutor(trx), { name: 'e', size: 1 })),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    const names = await db.selectFrom('items').select(['name', 'size']).orderBy('name').execute();
    expect(names).toEqual([
      { name: 'c', size: 1 },
      { name: 'e', size: 1 },
      { name: 'taken', size: 1 },
    ]);
  });
});
