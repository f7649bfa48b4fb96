// The SQLite driver's prepared statements (src/storage/sqlite-dialect.ts): each SQL text is
// prepared once however often it runs, and past the cache's size the least recently used goes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { STATEMENT_CACHE_SIZE as CACHE_SIZE } from '../../src/storage/sqlite-dialect.js';
import Database from '../../src/storage/sqlite-driver.js';

describe('SQLite prepared statements', () => {
  let directory: string;
  let storage: Storage;
  let db: Kysely<any>;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'devdata-statements-'));
    storage = openStorage(`sqlite:${join(directory, 'test.db')}`);
    db = storage.db as unknown as Kysely<any>;
  });

  afterEach(async () => {
    vi.restoreAllMocks();
    await storage.close();
    rmSync(directory, { recursive: true, force: true });
  });

  /** How many times each SQL text was prepared from now on. */
  function countPrepares(): Map<string, number> {
    const counts = new Map<string, number>();
    const prepare = Database.prototype.prepare;
    vi.spyOn(Database.prototype, 'prepare').mockImplementation(function (this: Database.Database, source: string) {
      counts.set(source, (counts.get(source) ?? 0) + 1);
      return prepare.call(this, source);
    });
    return counts;
  }

  const text = (index: number) => `select ${index} as n`;
  const run = async (index: number) => {
    const { rows } = await sql.raw<{ n: number }>(text(index)).execute(db);
    expect(rows).toEqual([{ n: index }]);
  };

  it('prepares a query once however often it runs, with whatever parameters', async () => {
    const counts = countPrepares();
    for (let value = 0; value < 1_000; value++) {
      const { rows } = await sql<{ n: number }>`select ${value} + 1 as n`.execute(db);
      expect(rows).toEqual([{ n: value + 1 }]);
    }
    expect([...counts.values()]).toEqual([1]);
  });

  it(`keeps the ${CACHE_SIZE} most recently used statements, not the first ${CACHE_SIZE} prepared`, async () => {
    const counts = countPrepares();
    for (let index = 0; index < CACHE_SIZE; index++) await run(index);
    // The first one used again is now the most recent: the next new text pushes out the second.
    await run(0);
    await run(CACHE_SIZE);
    await run(0);
    expect(counts.get(text(0))).toBe(1);
    await run(1);
    expect(counts.get(text(1))).toBe(2);
    for (let index = 2; index < CACHE_SIZE; index++) expect(counts.get(text(index))).toBe(1);
  });
});
