// Sending an import's rows as batches (POST /api/v1/batch), the way the CLI does: each batch with
// its own Idempotency-Key, made once and kept for the whole run, so a batch sent again after a lost
// connection is written once whatever became of the first try.
import { BATCH_MAX_OPERATIONS, type BatchResponseOf, batchesOf, DevdataError, type DevdataClient, type ImportRow, newIdempotencyKey } from '@devdata/client';

export interface ImportBatch {
  rows: ImportRow[];
  /** The batch's Idempotency-Key: every try of this batch sends it. */
  key: string;
}

type BatchResponse = BatchResponseOf<Array<ImportRow['operation']>>;

/** A row the service refused: its line in the file, the field (when the error names one) and why. */
export interface RowProblem {
  line: number;
  field: string | undefined;
  message: string;
}

/** How a run ended. `batch` is the index of the batch it ended at (the next one to send). */
export type ImportEnd =
  | { kind: 'finished' }
  | { kind: 'stopped'; batch: number }
  /** The service answered with an error: nothing of this batch was written. `resendable` when sending it again may succeed (a 429, a 5xx). */
  | { kind: 'refused'; batch: number; error: unknown; rows: RowProblem[]; resendable: boolean }
  /** No answer, even after the retries: the batch may or may not be written; its key makes sending it again safe. */
  | { kind: 'unreachable'; batch: number; error: unknown }
  | { kind: 'aborted' };

/** Tries of one batch after a connection failure (or while the service still runs its first try), and the first wait. */
const AUTOMATIC_TRIES = 4;
const FIRST_WAIT_MS = 1000;

/** The run's batches, each with the key every try of it sends. */
export function planImport(rows: readonly ImportRow[]): ImportBatch[] {
  return batchesOf(rows, BATCH_MAX_OPERATIONS).map((batchRows) => ({ rows: batchRows, key: newIdempotencyKey() }));
}

export interface RunHooks {
  signal: AbortSignal;
  /** Asked before each batch: a run stops between batches, never inside one. */
  stopRequested: () => boolean;
  onSent: (batch: number, response: BatchResponse) => void;
  /** A try of the batch failed without an answer; it is sent again (same key) after `delayMs`. */
  onRetry: (batch: number, delayMs: number) => void;
}

/** Sends `batches` from index `from` on, one at a time, until the end, a stop or a failure. */
export async function sendBatches(client: DevdataClient, batches: readonly ImportBatch[], from: number, hooks: RunHooks): Promise<ImportEnd> {
  for (let index = from; index < batches.length; index++) {
    if (hooks.stopRequested()) return { kind: 'stopped', batch: index };
    const batch = batches[index] as ImportBatch;
    try {
      hooks.onSent(index, await sendBatch(client, batch, index, hooks));
    } catch (error) {
      if (hooks.signal.aborted) return { kind: 'aborted' };
      if (unanswered(error)) return { kind: 'unreachable', batch: index, error };
      return { kind: 'refused', batch: index, error, rows: rowProblems(error, batch.rows), resendable: resendable(error) };
    }
  }
  return { kind: 'finished' };
}

async function sendBatch(client: DevdataClient, batch: ImportBatch, index: number, hooks: RunHooks): Promise<BatchResponse> {
  const operations = batch.rows.map((row) => row.operation);
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.batch(operations, { signal: hooks.signal, idempotencyKey: batch.key });
    } catch (error) {
      if (!unanswered(error) || attempt >= AUTOMATIC_TRIES || hooks.signal.aborted) throw error;
      const delayMs = FIRST_WAIT_MS * 2 ** (attempt - 1);
      hooks.onRetry(index, delayMs);
      await wait(delayMs, hooks.signal);
    }
  }
}

/** Resolves after `ms`, or at once when `signal` fires (the next try then fails as aborted). */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** No answer arrived (the connection failed), or the service is still running this key's first try. */
function unanswered(error: unknown): boolean {
  return error instanceof DevdataError && ((error.status === 0 && error.code !== 'aborted') || error.code === 'idempotency_key_in_use');
}

/** Refusals that are not kept with the key (api-decisions §11), so the same batch may pass later. */
function resendable(error: unknown): boolean {
  return error instanceof DevdataError && (error.status === 429 || error.status >= 500);
}

/** The rows an error's `details[].index` names, by their line in the file. */
export function rowProblems(error: unknown, rows: readonly ImportRow[]): RowProblem[] {
  if (!(error instanceof DevdataError)) return [];
  return error.details.flatMap((detail) => {
    const row = typeof detail.index === 'number' ? rows[detail.index] : undefined;
    if (!row) return [];
    // "/operations/3/state" → "state"; "/operations/3" names the whole row.
    const field = detail.path.split('/').slice(3).join('/');
    return [{ line: row.line, field: field === '' ? undefined : field, message: detail.message }];
  });
}

/** "lines 2–1,001": the span of the file the batches hold (rows skipped as unreadable lie between). */
export function lineSpan(batches: readonly ImportBatch[]): string {
  const first = batches[0]?.rows[0]?.line;
  const last = batches.at(-1)?.rows.at(-1)?.line;
  if (first === undefined || last === undefined) return 'no lines';
  return first === last ? `line ${formatCount(first)}` : `lines ${formatCount(first)}–${formatCount(last)}`;
}

const counts = new Intl.NumberFormat('en');

export function formatCount(value: number): string {
  return counts.format(value);
}
