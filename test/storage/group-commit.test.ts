// Group commit in the SQLite driver (src/storage/sqlite-dialect.ts): transactions that queue behind
// one another commit together, none is reported committed before the group's commit, a group under
// load waits a turn of the event loop for more to join, a failing one rolls back alone, a statement
// outside a transaction commits the group first, and a failed group commit fails every transaction
// in it. Watched from a second connection, as another process would.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from '../../src/storage/sqlite-driver.js';
import { sql, type Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/database.js';

describe('SQLite group commit', () => {
  let directory: string;
  let storage: Storage;
  let db: Kysely<any>;
  let observer: Database.Database;

  /** Rows another connection sees: only committed ones. */
  const committedNames = () => (observer.prepare('select name from items order by name').pluck().all() as string[]).join(',');

  beforeEach(async () => {
    directory = mkdtempSync(join(tmpdir(), 'devdata-group-commit-'));
    const file = join(directory, 'test.db');
    storage = openStorage(`sqlite:${file}`);
    db = storage.db as unknown as Kysely<any>;
    await sql`create table parents (id text primary key)`.execute(db);
    // A deferred foreign key is checked only at the outermost commit: a way to make a commit fail.
    await sql`create table items (name text primary key, parent text references parents (id) deferrable initially deferred)`.execute(db);
    observer = new Database(file, { readonly: true });
  });

  afterEach(async () => {
    observer.close();
    await storage.close();
    rmSync(directory, { recursive: true, force: true });
  });

  function insertIn(name: string, parent: string | null = null) {
    return db.transaction().execute(async (trx) => {
      await trx.insertInto('items').values({ name, parent }).execute();
      return name;
    });
  }

  it('commits queued transactions together, and reports none committed before the group is', async () => {
    let releaseFirst = () => {};
    const firstMayFinish = new Promise<void>((resolve) => (releaseFirst = resolve));
    const settled: string[] = [];
    const first = db.transaction().execute(async (trx) => {
      await trx.insertInto('items').values({ name: 'a' }).execute();
      await firstMayFinish;
      return 'a';
    });
    void first.then((name) => settled.push(name));
    // b and c queue for the connection while a holds it.
    await new Promise((resolve) => setTimeout(resolve, 10));
    const rest = ['b', 'c'].map((name) =>
      insertIn(name).then((done) => {
        settled.push(done);
        return done;
      }),
    );
    releaseFirst();
    await Promise.all([first, ...rest]);
    expect(settled).toEqual(['a', 'b', 'c']);
    expect(committedNames()).toBe('a,b,c');
  });

  it('keeps a transaction that waits for others unseen and unreported until the group commits', async () => {
    let releaseSecond = () => {};
    const secondMayFinish = new Promise<void>((resolve) => (releaseSecond = resolve));
    let firstSettled = false;
    const first = insertIn('a').then(() => (firstSettled = true));
    const second = db.transaction().execute(async (trx) => {
      await trx.insertInto('items').values({ name: 'b' }).execute();
      await secondMayFinish;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // a finished its work while b waited, so a joined b's group: not committed, not reported.
    expect(firstSettled).toBe(false);
    expect(committedNames()).toBe('');
    releaseSecond();
    await Promise.all([first, second]);
    expect(firstSettled).toBe(true);
    expect(committedNames()).toBe('a,b');
  });

  /** The next turn of the event loop: what was queued for this one (setImmediate) has run. */
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  it('keeps a group of two or more open one more turn of the event loop, so a transaction begun in it joins, and commits a lone one at once', async () => {
    const settled: string[] = [];
    const together = ['a', 'b'].map((name) => insertIn(name).then((done) => settled.push(done)));
    // The group's commit was queued for the first turn, after this test's: at the second, it waits.
    await nextTurn();
    await nextTurn();
    // Without the extra turn a and b would have committed by now.
    expect(committedNames()).toBe('');
    expect(settled).toEqual([]);
    const late = insertIn('c').then((done) => settled.push(done));
    await Promise.all([...together, late]);
    expect(settled).toEqual(['a', 'b', 'c']);
    expect(committedNames()).toBe('a,b,c');

    const alone = insertIn('d');
    await nextTurn();
    await nextTurn();
    expect(committedNames()).toBe('a,b,c,d');
    await alone;
  });

  it('rolls back a failing transaction alone', async () => {
    const results = await Promise.allSettled([
      insertIn('a'),
      db.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ name: 'doomed' }).execute();
        throw new Error('changed its mind');
      }),
      insertIn('c'),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(committedNames()).toBe('a,c');
  });

  it('commits the group before a statement outside a transaction, so that statement reads no uncommitted change', async () => {
    let releaseSecond = () => {};
    const secondMayFinish = new Promise<void>((resolve) => (releaseSecond = resolve));
    const first = insertIn('a');
    const second = db.transaction().execute(async (trx) => {
      await trx.insertInto('items').values({ name: 'b' }).execute();
      await secondMayFinish;
    });
    const read = db.selectFrom('items').select('name').execute();
    releaseSecond();
    await Promise.all([first, second]);
    // The read came after both in line: it sees both, committed.
    expect((await read).map((row) => row.name)).toEqual(['a', 'b']);
    expect(committedNames()).toBe('a,b');
  });

  it('fails every transaction of a group whose commit fails, and goes on afterwards', async () => {
    let releaseFirst = () => {};
    const firstMayFinish = new Promise<void>((resolve) => (releaseFirst = resolve));
    const first = db.transaction().execute(async (trx) => {
      await trx.insertInto('items').values({ name: 'a' }).execute();
      await firstMayFinish;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    // b breaks a deferred foreign key: the group's commit fails, taking a and c with it.
    const others = [insertIn('b', 'no-such-parent'), insertIn('c')];
    releaseFirst();
    const results = await Promise.allSettled([first, ...others]);
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY/);
    expect(committedNames()).toBe('');
    await insertIn('d');
    expect(committedNames()).toBe('d');
  });
});
