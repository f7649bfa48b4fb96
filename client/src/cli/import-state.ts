// The state file of `resources import`, which makes an import resumable without writing anything
// twice: the file's SHA-256, and for each batch its Idempotency-Key, the SHA-256 of its operations,
// and whether it was sent and is done. It is written before a batch is sent and after it is done,
// to a temporary file renamed over the old one, so that a kill at any moment leaves a whole file.
// A rerun skips the batches done and sends an unfinished one again with its key: the server
// replays it if it had been written. The server keeps keys for the hours its document states (IDEMPOTENCY_KEPT_HOURS).
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { batchesOf } from '../batch.js';
import { BATCH_MAX_OPERATIONS, IDEMPOTENCY_KEPT_HOURS as KEPT_HOURS } from '../generated/values.js';
import type { ImportRow } from '../import-rows.js';
import { newIdempotencyKey } from '../transport.js';

export interface BatchState {
  /** The Idempotency-Key every try of this batch sends. */
  key: string;
  /** SHA-256 of the batch's operations as sent: a rerun knows a changed batch by it. */
  sha256: string;
  /** The lines of its first and last row. */
  lines: [number, number];
  rows: number;
  /** Sent at least once, without an answer that it was written or refused: it may have been written. */
  sent: boolean;
  done: boolean;
  /** Once done: the resources it created and updated. */
  created?: number;
  updated?: number;
}

export interface ImportState {
  version: 1;
  file: string;
  sha256: string;
  batchSize: number;
  rows: number;
  batches: BatchState[];
  startedAt: string;
  updatedAt: string;
  completedAt?: string;
}

/** A state that does not fit the file as it is now (exit 1: the person decides). */
export class StateConflict extends Error {}

export function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The state at `path`, or undefined when there is none. */
export function readState(path: string): ImportState | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let state: ImportState;
  try {
    state = JSON.parse(text) as ImportState;
  } catch {
    state = {} as ImportState;
  }
  if (state.version !== 1 || !Array.isArray(state.batches) || !Number.isInteger(state.batchSize))
    throw new StateConflict(`${path} is not the state of a devdata-client import; remove it or name another with --state-file`);
  return state;
}

export function writeState(path: string, state: ImportState): void {
  state.updatedAt = new Date().toISOString();
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(temporary, path);
}

export interface ImportPlan {
  state: ImportState;
  batches: ImportRow[][];
  /** Said before the import starts: a key the server may have forgotten. */
  notes: string[];
}

const linesOf = (batch: { lines: [number, number] }) => `lines ${batch.lines[0]}-${batch.lines[1]}`;
const hashOf = (batch: ImportRow[]) => sha256(JSON.stringify(batch.map((row) => row.operation)));

/**
 * The batches to send and their state: all new; or, after an import of the same rows that stopped,
 * the batches it sent kept as they were (done, or perhaps written: sent again with their key) and
 * the rest split anew, in batches of `batchSize` (default: the size the import began with).
 * Refused (StateConflict) when rows already written, or perhaps written, have changed since.
 */
export function planImport(
  previous: ImportState | undefined,
  file: { path: string; statePath: string; sha256: string; rows: ImportRow[]; batchSize: number | undefined },
): ImportPlan {
  const notes: string[] = [];
  const batchSize = file.batchSize ?? previous?.batchSize ?? BATCH_MAX_OPERATIONS;
  const batches: ImportRow[][] = [];
  const states: BatchState[] = [];
  let offset = 0;
  for (const before of previous?.batches ?? []) {
    if (!before.done && !before.sent) break;
    const batch = file.rows.slice(offset, offset + before.rows);
    if (batch.length < before.rows || hashOf(batch) !== before.sha256) {
      const what = before.done ? 'were imported already' : 'were being sent when the import stopped (they may have been written)';
      throw new StateConflict(
        `the rows at ${linesOf(before)} ${what} and have changed since; restore the file, or remove ${file.statePath} to import it as new rows`,
      );
    }
    batches.push(batch);
    states.push(before);
    offset += batch.length;
  }
  for (const batch of batchesOf(file.rows.slice(offset), batchSize)) {
    batches.push(batch);
    states.push({ key: newIdempotencyKey(), sha256: hashOf(batch), lines: [batch[0]!.line, batch.at(-1)!.line], rows: batch.length, sent: false, done: false });
  }
  const now = new Date().toISOString();
  const state: ImportState = {
    version: 1,
    file: file.path,
    sha256: file.sha256,
    batchSize,
    rows: file.rows.length,
    batches: states,
    startedAt: previous?.startedAt ?? now,
    updatedAt: now,
    ...(previous?.completedAt && states.every((batch) => batch.done) && { completedAt: previous.completedAt }),
  };
  const unfinished = states.find((batch) => batch.sent && !batch.done);
  if (unfinished && previous && Date.parse(previous.updatedAt) < Date.now() - KEPT_HOURS * 3600_000) {
    notes.push(
      `warning: the rows at ${linesOf(unfinished)} were being sent ${previous.updatedAt}, more than ${KEPT_HOURS} hours ago; the server no longer knows their key, so if they were written then, they are written again`,
    );
  }
  return { state, batches, notes };
}
