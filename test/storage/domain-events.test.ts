// The one mechanism for cross-area reactions (src/domain-events.ts over src/storage/transaction.ts):
// reactions inside the transaction commit or roll back with the change; after-commit reactions run
// once the change is visible to another connection, and never for a change that rolled back.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from '../../src/storage/sqlite-driver.js';
import { sql, type Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { afterCommit, inTransaction } from '../../src/storage/transaction.js';
import { DomainEvents } from '../../src/domain-events.js';

describe('domain events and after-commit work', () => {
  let directory: string;
  let storage: Storage;
  let db: Kysely<any>;
  let observer: Database.Database;
  const committedIds = () => observer.prepare('select id from marks order by id').pluck().all() as string[];

  beforeEach(async () => {
    directory = mkdtempSync(join(tmpdir(), 'devdata-domain-events-'));
    const file = join(directory, 'test.db');
    storage = openStorage(`sqlite:${file}`);
    db = storage.db as unknown as Kysely<any>;
    await sql`create table marks (id text primary key)`.execute(db);
    observer = new Database(file, { readonly: true });
  });

  afterEach(async () => {
    observer.close();
    await storage.close();
    rmSync(directory, { recursive: true, force: true });
  });

  const mark = (exec: Kysely<any>, id: string) => exec.insertInto('marks').values({ id }).execute();

  it('runs after-commit work once the change is visible to another connection, in the order it was queued', async () => {
    const seen: string[] = [];
    await inTransaction(db as never, async (trx) => {
      await mark(trx as never, 'a');
      afterCommit(trx, () => seen.push(`first:${committedIds().join(',')}`));
      afterCommit(trx, () => seen.push('second'));
      expect(seen).toEqual([]);
    });
    expect(seen).toEqual(['first:a', 'second']);
  });

  it('never runs after-commit work of a transaction that rolled back', async () => {
    let ran = false;
    await expect(
      inTransaction(db as never, async (trx) => {
        await mark(trx as never, 'b');
        afterCommit(trx, () => (ran = true));
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(ran).toBe(false);
    expect(committedIds()).toEqual([]);
  });

  it('refuses after-commit work on a transaction it cannot see commit, and runs it at once outside one', async () => {
    await expect(db.transaction().execute(async (trx) => afterCommit(trx as never, () => {}))).rejects.toThrow(/inTransaction/);
    let ran = false;
    afterCommit(db as never, () => (ran = true));
    expect(ran).toBe(true);
  });

  it('a failing inside reaction rolls the change back and its after-commit reactions never run', async () => {
    const domain = new DomainEvents();
    const after: string[] = [];
    domain.inside('key.revoked', async (exec, key) => {
      await mark(exec as never, `inside-${key.id}`);
      if (key.id === 'bad') throw new Error('reaction failed');
    });
    domain.afterCommit('key.revoked', (key) => after.push(`${key.id}:${committedIds().join(',')}`));

    await inTransaction(db as never, async (trx) => {
      await mark(trx as never, 'good');
      await domain.emit(trx, 'key.revoked', { id: 'good', accountId: 'acc' });
    });
    await expect(
      inTransaction(db as never, async (trx) => {
        await mark(trx as never, 'bad');
        await domain.emit(trx, 'key.revoked', { id: 'bad', accountId: 'acc' });
      }),
    ).rejects.toThrow('reaction failed');

    expect(after).toEqual(['good:good,inside-good']);
    expect(committedIds()).toEqual(['good', 'inside-good']);
  });

  it('stops a reaction when asked', async () => {
    const domain = new DomainEvents();
    const after: string[] = [];
    const stop = domain.afterCommit('credentials.ended', ({ ids }) => after.push(...ids));
    await inTransaction(db as never, (trx) => domain.emit(trx, 'credentials.ended', { ids: ['one'], how: 'revoked' }));
    stop();
    await inTransaction(db as never, (trx) => domain.emit(trx, 'credentials.ended', { ids: ['two'], how: 'revoked' }));
    expect(after).toEqual(['one']);
  });
});
