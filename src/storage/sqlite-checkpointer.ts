// WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the commit that
// pushes the WAL past 1,000 pages: it copies the pages into the database file and fsyncs it on the
// server's only thread, which stalled every request and stream in the soak (bench/HISTORY.md,
// "Long runs"). The server's connection turns automatic checkpoints off, and a
// worker thread with a connection of its own checkpoints instead:
// - every interval, PASSIVE: it copies what is committed without waiting for a lock or blocking
//   the writer. Under steady writes it never catches up, though: the writer appends while it copies,
//   and SQLite starts the WAL over only when a write begins with every frame copied. Without more,
//   the WAL grew without bound in the soak.
// - so once the WAL holds RESTART_FRAMES, a complete one: the server holds its writes back (they
//   wait asynchronously; the event loop goes on), the worker copies the few frames written since
//   its last pass, and the next write starts the WAL over from its beginning.
import { Worker } from 'node:worker_threads';
import { sqliteModulePath } from './sqlite-driver.js';

/** How often the worker checkpoints. */
export const CHECKPOINT_INTERVAL_MS = 500;
/** WAL frames (pages, 4 KiB) past which writes pause for a complete checkpoint: the WAL stays about this size (32 MiB). */
export const RESTART_FRAMES = 8192;
/** The WAL file's size kept when it starts over (journal_size_limit): twice the frames a complete checkpoint waits for. */
export const WAL_SIZE_LIMIT_BYTES = 2 * RESTART_FRAMES * 4096;
/** Writes wait at most this long for a complete checkpoint: a worker that does not answer does not stop them. */
const COMPLETE_TIMEOUT_MS = 2000;

/**
 * The worker's code, CommonJS given as text: the same text runs from the TypeScript sources (the
 * tests) and from the build, where a worker file beside this one would exist only in the second.
 * It answers `{ log }` (the WAL's frames) after each pass, with `complete: true` for one asked for.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.modulePath);
const db = new SQLite(workerData.path, { fileMustExist: true });
const checkpoint = db.prepare('pragma wal_checkpoint(PASSIVE)');
function pass(complete) {
  try {
    const [result] = checkpoint.all();
    parentPort.postMessage({ log: result.log, complete });
  } catch {
    parentPort.postMessage({ error: true, complete });
  }
}
const timer = setInterval(() => pass(false), workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message === 'complete') return pass(true);
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

type WorkerMessage = { log: number; complete: boolean } | { error: true; complete: boolean };

export interface BackgroundCheckpointer {
  /** For the status body: whether it runs, the last checkpoint, the WAL's frames then, complete checkpoints and failures (never a message: the body is public). */
  report(): Record<string, unknown>;
  /** Stops the worker and closes its connection; the server's connection closes after it (and checkpoints last). */
  stop(): Promise<void>;
}

export interface CheckpointOptions {
  intervalMs?: number;
  restartFrames?: number;
  /** Runs `work` with the server's writes held back (QueuedSqliteDialect.exclusively). */
  pauseWrites: <T>(work: () => Promise<T>) => Promise<T>;
  /**
   * The worker ended without being stopped (it could not open the database, or crashed): nobody
   * checkpoints any more, and the server's connection must go back to SQLite's own checkpoints
   * or the WAL grows without end.
   */
  onLost: () => void;
}

export function startBackgroundCheckpoints(path: string, options: CheckpointOptions): BackgroundCheckpointer {
  const intervalMs = options.intervalMs ?? CHECKPOINT_INTERVAL_MS;
  const restartFrames = options.restartFrames ?? RESTART_FRAMES;
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, modulePath: sqliteModulePath, intervalMs } });
  // The worker never keeps the process alive: a server that forgot to stop it still exits.
  worker.unref();
  let lastCheckpointAt: string | null = null;
  let walFrames = 0;
  let completeCheckpoints = 0;
  let failures = 0;
  let stopping = false;
  /** A complete checkpoint is asked for and not yet done (at most one at a time). */
  let asked = false;
  /** Ends the wait for the complete checkpoint the worker is making, while writes are held back. */
  let completing: (() => void) | undefined;

  const completeCheckpoint = async (): Promise<void> => {
    asked = true;
    try {
      await options.pauseWrites(
        () =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(done, COMPLETE_TIMEOUT_MS);
            function done(): void {
              clearTimeout(timer);
              completing = undefined;
              resolve();
            }
            completing = done;
            worker.postMessage('complete');
          }),
      );
    } finally {
      asked = false;
    }
  };

  worker.on('message', (message: WorkerMessage) => {
    if ('error' in message) failures++;
    else {
      lastCheckpointAt = new Date().toISOString();
      walFrames = message.log;
      if (message.complete) completeCheckpoints++;
    }
    if (message.complete) completing?.();
    else if (!('error' in message) && message.log >= restartFrames && !asked && !stopping) void completeCheckpoint();
  });
  // Counted when it exits (an uncaught error ends the worker): a listener keeps it from throwing here.
  worker.on('error', () => undefined);
  let lost = false;
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      completing?.();
      if (!stopping) {
        lost = true;
        failures++;
        options.onLost();
      }
      resolve();
    }),
  );
  return {
    report: () => ({ running: !stopping && !lost, intervalMs, lastCheckpointAt, walFrames, completeCheckpoints, failures }),
    async stop() {
      stopping = true;
      // Referenced again while it stops: an unreferenced worker is no reason to wait, and a
      // command whose last work is this stop would exit here with its output unwritten.
      worker.ref();
      worker.postMessage('stop');
      await exited;
    },
  };
}
