// WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the commit that
// pushes the WAL past 1,000 pages: it copies the pages into the database file and fsyncs it on the
// server's only thread, which stalled every request and stream for up to 26 ms in the soak
// (bench/README.md, "Long runs"). The server's connection turns automatic checkpoints off, and a
// worker thread with a connection of its own runs a PASSIVE checkpoint every interval: it never
// waits for a lock and never blocks the writer, and once it has copied every frame, the server's
// next write starts the WAL over from its beginning, so the file stays as small as one interval's
// writes.
import { Worker } from 'node:worker_threads';
import { sqliteModulePath } from './sqlite-driver.js';

/** How often the worker checkpoints: the WAL holds at most about this long's writes. */
export const CHECKPOINT_INTERVAL_MS = 500;

/**
 * The worker's code, CommonJS given as text: the same text runs from the TypeScript sources (the
 * tests) and from the build, where a worker file beside this one would exist only in the second.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.modulePath);
const db = new SQLite(workerData.path, { fileMustExist: true });
const checkpoint = db.prepare('pragma wal_checkpoint(PASSIVE)');
const timer = setInterval(() => {
  try {
    const [result] = checkpoint.all();
    parentPort.postMessage({ log: result.log });
  } catch {
    parentPort.postMessage({ error: true });
  }
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export interface BackgroundCheckpointer {
  /** For the status body: when the worker last checkpointed, the WAL's frames then, and failures (never a message: the body is public). */
  report(): Record<string, unknown>;
  /** Stops the worker and closes its connection; the server's connection closes after it (and checkpoints last). */
  stop(): Promise<void>;
}

export function startBackgroundCheckpoints(path: string, intervalMs = CHECKPOINT_INTERVAL_MS): BackgroundCheckpointer {
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, modulePath: sqliteModulePath, intervalMs } });
  // The worker never keeps the process alive: a server that forgot to stop it still exits.
  worker.unref();
  let lastCheckpointAt: string | null = null;
  let walFrames = 0;
  let failures = 0;
  worker.on('message', (message: { log: number } | { error: true }) => {
    if ('error' in message) {
      failures++;
      return;
    }
    lastCheckpointAt = new Date().toISOString();
    walFrames = message.log;
  });
  worker.on('error', () => failures++);
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    report: () => ({ intervalMs, lastCheckpointAt, walFrames, failures }),
    async stop() {
      // Referenced again while it stops: an unreferenced worker is no reason to wait, and a
      // command whose last work is this stop would exit here with its output unwritten.
      worker.ref();
      worker.postMessage('stop');
      await exited;
    },
  };
}
