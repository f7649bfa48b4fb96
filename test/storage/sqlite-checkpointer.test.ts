// WAL checkpoints from a worker thread (src/storage/sqlite-checkpointer.ts): the server's own
// connection never checkpoints inside a commit, the worker keeps the WAL bounded under steady
// writes, its checkpoints are not taken for another process's writes, and close stops it.
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/database.js';
import { startBackgroundCheckpoints } from '../../src/storage/sqlite-checkpointer.js';
import { until } from '../support/wait.js';

/** 8 MB in 400 transactions of 20 rows of 1 KB: far past SQLite's automatic checkpoint at 1,000 pages (4 MB). */
const TRANSACTIONS = 400;
const ROWS_PER_TRANSACTION = 20;
const ROW_BYTES = 1024;
const WRITTEN_BYTES = TRANSACTIONS * ROWS_PER_TRANSACTION * ROW_BYTES;

describe('background WAL checkpoints', () => {
  let directory: string;
  let file: string;
  let storage: Storage | undefined;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'devdata-checkpoints-'));
    file = join(directory, 'test.db');
  });

  afterEach(async () => {
    await storage?.close();
    storage = undefined;
    rmSync(directory, { recursive: true, force: true });
  });

  async function open(intervalMs: number, restartFrames?: number): Promise<Kysely<any>> {
    storage = openStorage(`sqlite:${file}`, { backgroundCheckpoints: { intervalMs, restartFrames } });
    const db = storage.db as unknown as Kysely<any>;
    await sql`create table blobs (id integer primary key, body blob not null)`.execute(db);
    // The worker is running (its thread starts in tens of milliseconds, writes go faster).
    if (intervalMs < 1000) await checkpointed();
    return db;
  }

  async function write(db: Kysely<any>, transactions: number, pause?: () => Promise<void>): Promise<void> {
    for (let t = 0; t < transactions; t++) {
      await db.transaction().execute(async (trx) => {
        for (let r = 0; r < ROWS_PER_TRANSACTION; r++)
          await trx
            .insertInto('blobs')
            .values({ body: Buffer.alloc(ROW_BYTES, t % 251) })
            .execute();
      });
      if (pause && t % 20 === 19) await pause();
    }
  }

  const report = () => storage!.checkpointer!.report() as { lastCheckpointAt: string | null; walFrames: number; completeCheckpoints: number; failures: number };
  const size = (path: string) => (existsSync(path) ? statSync(path).size : 0);

  async function checkpointed(): Promise<void> {
    const before = report().lastCheckpointAt;
    await until(() => report().lastCheckpointAt !== before, "the worker's next checkpoint", 30_000, 10);
  }

  it("leaves the server's connection without automatic checkpoints: with the worker idle, every write stays in the WAL", async () => {
    const db = await open(3_600_000);
    const fileBefore = size(file);
    await write(db, TRANSACTIONS);
    // SQLite's default would have copied the pages into the database file at 1,000 pages of WAL.
    expect(size(`${file}-wal`)).toBeGreaterThan(WRITTEN_BYTES);
    expect(size(file)).toBe(fileBefore);
  });

  it('keeps the WAL bounded under writes that never pause (past its limit, writes wait for a complete checkpoint), and every row is there', async () => {
    // 256 frames = 1 MiB; the writes below are 8 MB with no await on a checkpoint, as under steady load.
    const db = await open(10, 256);
    // The WAL's frames at each of the worker's passes: the file itself keeps its largest size.
    let largestWal = 0;
    const sampler = setInterval(() => {
      largestWal = Math.max(largestWal, report().walFrames);
    }, 1);
    try {
      await write(db, TRANSACTIONS, () => new Promise((resolve) => setTimeout(resolve, 2)));
    } finally {
      clearInterval(sampler);
    }
    expect(report().completeCheckpoints).toBeGreaterThan(0);
    expect(report().failures).toBe(0);
    // PASSIVE alone would leave every page written in the WAL: the writer appends while it copies.
    expect(largestWal).toBeGreaterThan(0);
    expect(largestWal * 4096).toBeLessThan(WRITTEN_BYTES / 2);
    // What left the WAL is in the database file, and every row reads back.
    expect(size(file)).toBeGreaterThan(WRITTEN_BYTES);
    const { count } = (await sql<{ count: number }>`select count(*) as count from blobs`.execute(db)).rows[0]!;
    expect(count).toBe(TRANSACTIONS * ROWS_PER_TRANSACTION);
  });

  it("does not count the worker's checkpoints as another process's writes (data_version)", async () => {
    const db = await open(20);
    await write(db, 50);
    const version = storage!.dataVersion!();
    await checkpointed();
    await checkpointed();
    expect(report().walFrames).toBeGreaterThan(0);
    expect(storage!.dataVersion!()).toBe(version);
    // Its own next write restarts the WAL; still not another process's write.
    await write(db, 1);
    expect(storage!.dataVersion!()).toBe(version);
  });

  it('stops the worker on close; the last connection checkpoints the rest and removes the WAL', async () => {
    const db = await open(3_600_000);
    await write(db, 50);
    expect(size(`${file}-wal`)).toBeGreaterThan(0);
    await storage!.close();
    storage = undefined;
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it('hands checkpoints back to the server when the worker ends unasked (here: it cannot open the database)', async () => {
    let lost = 0;
    const checkpointer = startBackgroundCheckpoints(join(directory, 'missing.db'), { intervalMs: 10, pauseWrites: (work) => work(), onLost: () => lost++ });
    await until(() => lost > 0, 'the worker to end', 30_000, 10);
    expect(lost).toBe(1);
    expect(checkpointer.report()).toMatchObject({ running: false, lastCheckpointAt: null, failures: 1 });
    await checkpointer.stop();
    expect(lost).toBe(1);
  });

  it('runs no worker for an in-memory database or without the option', async () => {
    storage = openStorage('sqlite::memory:', { backgroundCheckpoints: {} });
    expect(storage.checkpointer).toBeUndefined();
    await storage.close();
    storage = openStorage(`sqlite:${file}`);
    expect(storage.checkpointer).toBeUndefined();
  });
});
