// devdata-client resources import FILE: the rows of an NDJSON or CSV file (import-rows.ts) sent in
// batches, in order, with a progress bar on a terminal and a line per batch elsewhere, resumable
// through its state file (import-state.ts) without writing anything twice.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { BatchFailure } from '../batch.js';
import { DevdataError } from '../errors.js';
import { BATCH_MAX_OPERATIONS } from '../generated/values.js';
import { type ImportFormat, type ImportRow, importFormatOf, parseImportRows } from '../import-rows.js';
import { type CommandInput, Interrupted, UsageError, type Values } from './command.js';
import { type BatchState, type ImportState, planImport, readState, sha256, writeState } from './import-state.js';
import { type Output, print } from './output.js';
import { Progress } from './progress.js';
import { integerValue, interruption, stringValue } from './values.js';

const FORMATS: readonly ImportFormat[] = ['ndjson', 'csv'];
/** The unreadable rows listed one by one; a count says the rest. */
const LISTED = 20;

/** --format: ndjson or csv, when given. */
export function formatValue(values: Values): ImportFormat | undefined {
  const format = stringValue(values, 'format');
  if (format !== undefined && !(FORMATS as readonly string[]).includes(format)) throw new UsageError(`--format must be ndjson or csv, not "${format}"`);
  return format as ImportFormat | undefined;
}

const count = (value: number) => value.toLocaleString('en-US');
const linesOf = (batch: BatchState) => `lines ${batch.lines[0]}-${batch.lines[1]}`;

/** The default state file: beside the file, named after it. */
export function defaultStatePath(file: string): string {
  return `${file}.import-state.json`;
}

export async function importResources({ values, positionals, client }: CommandInput, output: Output): Promise<void> {
  const path = positionals[0]!;
  const batchSize = integerValue(values, 'batch-size');
  if (batchSize !== undefined && (batchSize < 1 || batchSize > BATCH_MAX_OPERATIONS))
    throw new UsageError(`--batch-size must be 1-${BATCH_MAX_OPERATIONS}, not ${batchSize}`);
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const text = bytes.toString('utf8');
  const { rows, errors } = parseImportRows(text, formatValue(values) ?? importFormatOf(path, text));
  for (const error of errors.slice(0, LISTED)) output.err(`${path}:${error.line}: ${error.message}`);
  if (errors.length > LISTED) output.err(`… and ${count(errors.length - LISTED)} more rows that cannot be read`);
  if (errors.length > 0 && !values['skip-invalid'])
    throw new Error(
      `${count(errors.length)} of ${count(rows.length + errors.length)} rows cannot be read: nothing was sent (correct them, or --skip-invalid imports the others)`,
    );

  const statePath = stringValue(values, 'state-file') ?? defaultStatePath(path);
  const plan = planImport(readState(statePath), { path: resolve(path), statePath, sha256: sha256(bytes), rows, batchSize });
  const { state } = plan;
  const doneBefore = rowsDone(state);
  const summary = () => summarize(output, path, state, errors.length, doneBefore);
  if (state.batches.every((batch) => batch.done)) {
    if (rows.length > 0) output.err(`${path} was imported already (${statePath}); nothing was sent. Remove the state file to import it again.`);
    return summary();
  }
  for (const note of plan.notes) output.err(note);
  if (doneBefore > 0) output.err(`Resuming: ${count(doneBefore)} of ${count(rows.length)} rows were imported before (${statePath}).`);
  writeState(statePath, state);

  const devdata = client();
  const signal = interruption();
  const progress = new Progress(process.stderr, rows.length, 'rows', doneBefore);
  progress.start(doneBefore);
  for (const [index, batch] of plan.batches.entries()) {
    const batchState = state.batches[index]!;
    if (batchState.done) continue;
    batchState.sent = true;
    writeState(statePath, state);
    try {
      const { results } = await devdata.batch(
        batch.map((row) => row.operation),
        { idempotencyKey: batchState.key, signal },
      );
      batchState.created = results.filter((result) => result.op === 'create').length;
      batchState.updated = results.length - batchState.created;
    } catch (error) {
      progress.end();
      throw stopped(error, { path, statePath, state, index, batch, output });
    }
    batchState.done = true;
    writeState(statePath, state);
    progress.update(rowsDone(state));
  }
  progress.end();
  state.completedAt = new Date().toISOString();
  writeState(statePath, state);
  summary();
}

function rowsDone(state: ImportState): number {
  return state.batches.reduce((sum, batch) => sum + (batch.done ? batch.rows : 0), 0);
}

function summarize(output: Output, path: string, state: ImportState, skipped: number, before: number): void {
  const sum = (field: 'created' | 'updated') => state.batches.reduce((total, batch) => total + (batch[field] ?? 0), 0);
  const report = {
    file: path,
    rows: state.rows,
    created: sum('created'),
    updated: sum('updated'),
    skipped,
    batches: state.batches.length,
    importedBefore: before,
  };
  print(output, report, () => {
    const resumed = before > 0 ? ` (${count(before)} of them before this run)` : '';
    const skip = skipped > 0 ? `; ${count(skipped)} rows that cannot be read were skipped` : '';
    output.out(
      `Imported ${count(report.rows)} rows from ${path} in ${count(report.batches)} batches${resumed}: ${count(report.created)} created, ${count(report.updated)} updated${skip}.`,
    );
  });
}

/**
 * What the import says when a batch did not get through, as the error that ends the command. A
 * refusal (a 4xx but 408, 409, 429) wrote nothing of the batch: its rows are named by their
 * lines, and a rerun sends them anew (new keys) once the file is corrected. Anything
 * else (Ctrl-C, no answer, 5xx) may have written it: it keeps its key for the rerun.
 */
function stopped(error: unknown, at: { path: string; statePath: string; state: ImportState; index: number; batch: ImportRow[]; output: Output }): unknown {
  const { path, statePath, state, index, batch, output } = at;
  const batchState = state.batches[index]!;
  const done = rowsDone(state);
  const sofar = `${count(done)} of ${count(state.rows)} rows were imported`;
  if (!(error instanceof DevdataError)) return error;
  if (error.code === 'aborted') return new Interrupted(`stopped: ${sofar}; run the same command again to resume (${statePath})`);
  const refused = error.status >= 400 && error.status < 500 && ![408, 409, 429].includes(error.status);
  const about = { status: error.status, code: error.code, requestId: error.requestId, headers: error.headers, cause: error };
  if (!refused) {
    return new DevdataError({
      ...about,
      message: `${error.message}. The rows at ${linesOf(batchState)} may or may not have been written, ${sofar} before them; run the same command again to resume: they are sent again with the same key, so nothing is written twice`,
    });
  }
  // Nothing of it was written: the rerun splits its rows anew, with new keys.
  batchState.sent = false;
  writeState(statePath, state);
  const failure = new BatchFailure(error, { batch: index, batches: state.batches.length, done });
  const rowOf = (operation: unknown) => (typeof operation === 'number' ? batch[operation - done] : undefined);
  for (const detail of failure.details) {
    const field = detail.path.replace(/^\/operations\/\d+\/?/, '');
    output.err(`${path}:${rowOf(detail.index)?.line ?? '?'}: ${field ? `${field}: ` : ''}${detail.message}`);
  }
  const line = rowOf(failure.operationIndex)?.line;
  const which =
    line === undefined
      ? `The rows at ${linesOf(batchState)} were refused`
      : `The row at line ${line} was refused, so none of ${linesOf(batchState)} was written`;
  // A body over the server's limit: the rows are fine, the batch too large (its rows' attributes, say).
  const advice = error.status === 413 ? 'Run the same command again with a smaller --batch-size' : 'Correct the file and run the same command again to go on';
  return new DevdataError({ ...about, message: `${error.message}. ${which} (batch ${index + 1} of ${state.batches.length}); ${sofar} before them. ${advice}` });
}
