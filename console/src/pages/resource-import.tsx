// Importing resources from a CSV or NDJSON file, as `devdata-client resources import` does: the
// client's parser reads the rows (the same one as the CLI's), a preview shows what they become, and
// batches of up to 1,000 go to POST /api/v1/batch with a progress bar; a refused batch names its
// rows by their lines, and what was imported before it is said.
import { importFormatOf, parseImportRows, type ImportFormat, type ImportRow, type ImportRowError } from '@devdata/client';
import type { Ref } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { useModal } from '../components/dialog';
import { Busy, ErrorNotice, Notice } from '../components/feedback';
import { useClient } from '../connection-context';
import { RowsPreview, UnreadableRows } from './resource-import-preview';
import { formatCount, type ImportBatch, type ImportEnd, lineSpan, planImport, sendBatches } from './resource-import-run';

interface ChosenFile {
  name: string;
  format: ImportFormat;
  rows: ImportRow[];
  errors: ImportRowError[];
}

interface Progress {
  imported: number;
  created: number;
  updated: number;
  /** The batch being sent (or, once ended, the one it ended at). */
  batch: number;
  retrying: boolean;
}

const FORMAT_NAMES: Record<ImportFormat, string> = { csv: 'CSV', ndjson: 'NDJSON' };

function resources(count: number): string {
  return `${formatCount(count)} resource${count === 1 ? '' : 's'}`;
}

/** The import dialog. `onEnded` is called whenever a run ends (the list is read again then). */
export function ImportResources({ onClose, onEnded }: { onClose: () => void; onEnded: () => void }) {
  const client = useClient();
  const dialog = useRef<HTMLDialogElement>(null);
  const [reading, setReading] = useState(false);
  const [readError, setReadError] = useState<unknown>(undefined);
  const [file, setFile] = useState<ChosenFile | undefined>(undefined);
  const [skipUnreadable, setSkipUnreadable] = useState(false);
  const [batches, setBatches] = useState<ImportBatch[] | undefined>(undefined);
  const [progress, setProgress] = useState<Progress>({ imported: 0, created: 0, updated: 0, batch: 0, retrying: false });
  const [running, setRunning] = useState(false);
  const [end, setEnd] = useState<ImportEnd | undefined>(undefined);
  const [stopping, setStopping] = useState(false);
  const stopRequested = useRef(false);
  const controller = useRef(new AbortController());
  const progressRef = useRef<HTMLDivElement>(null);
  const outcomeRef = useRef<HTMLDivElement>(null);

  // Its requests stop before it closes (aborting them after the focus went back lost it again:
  // on Node.js 22's server, consistently); what opened it (the Import button) then gets focus back.
  useEffect(() => () => controller.current.abort(), []);
  useModal(dialog);
  useEffect(() => {
    if (running) progressRef.current?.focus();
  }, [running]);
  useEffect(() => {
    if (end) outcomeRef.current?.focus();
  }, [end]);

  const choose = async (chosen: File) => {
    setReading(true);
    setReadError(undefined);
    setFile(undefined);
    setSkipUnreadable(false);
    try {
      const text = await chosen.text();
      const format = importFormatOf(chosen.name, text);
      setFile({ name: chosen.name, format, ...parseImportRows(text, format) });
    } catch (error) {
      setReadError(error);
    } finally {
      setReading(false);
    }
  };

  const run = async (plan: ImportBatch[], from: number) => {
    stopRequested.current = false;
    setStopping(false);
    setEnd(undefined);
    setRunning(true);
    setProgress((current) => ({ ...current, batch: from, retrying: false }));
    const ended = await sendBatches(client, plan, from, {
      signal: controller.current.signal,
      stopRequested: () => stopRequested.current,
      onSent: (index, response) =>
        setProgress((current) => ({
          imported: current.imported + response.results.length,
          created: current.created + response.results.filter((result) => result.op === 'create').length,
          updated: current.updated + response.results.filter((result) => result.op === 'update').length,
          batch: index + 1,
          retrying: false,
        })),
      onRetry: () => setProgress((current) => ({ ...current, retrying: true })),
    });
    if (ended.kind === 'aborted') return;
    setRunning(false);
    setProgress((current) => ({ ...current, retrying: false }));
    setEnd(ended);
    onEnded();
  };

  const start = () => {
    if (!file) return;
    const plan = planImport(file.rows);
    setBatches(plan);
    setProgress({ imported: 0, created: 0, updated: 0, batch: 0, retrying: false });
    void run(plan, 0);
  };

  const count = file?.rows.length ?? 0;
  const blockedByUnreadable = file !== undefined && file.errors.length > 0 && !skipUnreadable;
  const started = batches !== undefined;
  return (
    <dialog
      ref={dialog}
      class="import"
      aria-labelledby="import-title"
      onCancel={(event) => {
        event.preventDefault();
        // Escape closes it, except while batches are being sent (Stop ends a run between batches).
        if (!running) onClose();
      }}
    >
      <h2 id="import-title">Import resources</h2>
      {!started && <FilePicker onFile={choose} disabled={reading} />}
      {reading && <Busy label="Reading the file" />}
      <ErrorNotice error={readError} title="The file could not be read" />
      {file && !started && (
        <>
          <p role="status">
            <strong>{file.name}</strong> ({FORMAT_NAMES[file.format]}): {resources(count)} to import
            {count > 0 && <> ({summarize(file.rows)})</>}
            {file.errors.length > 0 && <>, {formatCount(file.errors.length)} unreadable</>}.
          </p>
          <UnreadableRows errors={file.errors} />
          {file.errors.length > 0 && count > 0 && (
            <div class="field field-inline">
              <input id="import-skip" type="checkbox" checked={skipUnreadable} onChange={(event) => setSkipUnreadable(event.currentTarget.checked)} />
              <label for="import-skip">Import the readable rows and skip the unreadable ones</label>
            </div>
          )}
          <RowsPreview rows={file.rows} />
        </>
      )}
      {started && file && (
        <ImportProgress focusRef={progressRef} name={file.name} total={count} batches={batches.length} progress={progress} running={running} />
      )}
      {end && batches && (
        <div ref={outcomeRef} tabIndex={-1} class="import-outcome">
          <Outcome end={end} batches={batches} progress={progress} />
        </div>
      )}
      <div class="actions">
        {file && !started && (
          <>
            <button
              type="button"
              onClick={start}
              disabled={count === 0 || blockedByUnreadable}
              aria-describedby={blockedByUnreadable ? 'import-blocked' : undefined}
            >
              Import {resources(count)}
            </button>
            {blockedByUnreadable && (
              <span class="reason" id="import-blocked">
                Fix the unreadable lines and choose the file again, or tick the box to skip them.
              </span>
            )}
          </>
        )}
        {running && (
          <button
            type="button"
            class="secondary"
            disabled={stopping}
            onClick={() => {
              stopRequested.current = true;
              setStopping(true);
            }}
          >
            {stopping ? 'Stopping after this batch…' : 'Stop after this batch'}
          </button>
        )}
        {end && batches && resumable(end) && (
          <button type="button" onClick={() => void run(batches, end.batch)}>
            {end.kind === 'stopped' ? 'Go on importing' : `Send batch ${end.batch + 1} again`}
          </button>
        )}
        <button type="button" class="secondary" onClick={onClose} disabled={running}>
          Close
        </button>
      </div>
    </dialog>
  );
}

function resumable(end: ImportEnd): end is ImportEnd & { batch: number } {
  return end.kind === 'stopped' || end.kind === 'unreachable' || (end.kind === 'refused' && end.resendable);
}

function summarize(rows: readonly ImportRow[]): string {
  const updates = rows.filter((row) => row.operation.op === 'update').length;
  return `${formatCount(rows.length - updates)} new, ${formatCount(updates)} update${updates === 1 ? '' : 's'}`;
}

function FilePicker({ onFile, disabled }: { onFile: (file: File) => void; disabled: boolean }) {
  const [dragging, setDragging] = useState(false);
  return (
    // A fieldset (a group), so that what takes a drop has a role; the file input is the way by keyboard.
    <fieldset
      class={dragging ? 'drop-zone dragging' : 'drop-zone'}
      onDragOver={(event) => {
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={(event) => {
        event.preventDefault();
        setDragging(false);
        const dropped = event.dataTransfer?.files[0];
        if (dropped && !disabled) onFile(dropped);
      }}
    >
      <legend class="visually-hidden">The file to import</legend>
      <label for="import-file">CSV or NDJSON file</label>
      <input
        id="import-file"
        class="drop-zone-file"
        type="file"
        accept=".csv,.ndjson,.jsonl,text/csv,application/x-ndjson"
        disabled={disabled}
        aria-describedby="import-file-hint"
        onChange={(event) => {
          const chosen = event.currentTarget.files?.[0];
          if (chosen) onFile(chosen);
        }}
      />
      <p class="hint" id="import-file-hint">
        Or drop it here. CSV with a header row: <code>id</code> (empty to create), <code>name</code>, <code>type</code>, <code>state</code>, <code>tags</code>{' '}
        (separated by <code>;</code>), <code>attributes</code> (a JSON object), <code>version</code>. NDJSON: a resource per line, as{' '}
        <code>devdata-client resources export</code> writes them. A row with an id updates that resource.
      </p>
    </fieldset>
  );
}

function ImportProgress({
  focusRef,
  name,
  total,
  batches,
  progress,
  running,
}: {
  focusRef: Ref<HTMLDivElement>;
  name: string;
  total: number;
  batches: number;
  progress: Progress;
  running: boolean;
}) {
  const share = total === 0 ? 0 : (progress.imported / total) * 100;
  return (
    <div class="import-progress" ref={focusRef} tabIndex={-1}>
      <p id="import-progress-label">
        {running ? 'Importing' : 'Import of'} <strong>{name}</strong>
      </p>
      <div
        class="progress"
        role="progressbar"
        aria-labelledby="import-progress-label"
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuenow={progress.imported}
        aria-valuetext={`${formatCount(progress.imported)} of ${resources(total)}`}
      >
        <div class="progress-done" style={{ width: `${share}%` }} />
      </div>
      <p class="muted" aria-live="polite">
        {formatCount(progress.imported)} of {formatCount(total)} done
        {running && (
          <>
            {' '}
            · batch {formatCount(Math.min(progress.batch + 1, batches))} of {formatCount(batches)}
          </>
        )}
        {running && progress.retrying && <> · no answer: sending the batch again with the same Idempotency-Key</>}
      </p>
    </div>
  );
}

function Outcome({ end, batches, progress }: { end: ImportEnd; batches: readonly ImportBatch[]; progress: Progress }) {
  if (end.kind === 'aborted') return null;
  if (end.kind === 'finished')
    return (
      <Notice kind="success">
        <p>
          <strong>Imported {resources(progress.imported)}</strong>: {formatCount(progress.created)} created, {formatCount(progress.updated)} updated.
        </p>
      </Notice>
    );
  const before = batches.slice(0, end.batch);
  const rest = batches.slice(end.batch);
  const already =
    progress.imported === 0 ? (
      <p>Nothing was imported.</p>
    ) : (
      <p>
        Already imported: {resources(progress.imported)}, {lineSpan(before)} of the file ({formatCount(progress.created)} created,{' '}
        {formatCount(progress.updated)} updated). Not imported: {lineSpan(rest)}.
      </p>
    );
  if (end.kind === 'stopped')
    return (
      <Notice kind="warning">
        <p>
          <strong>Stopped between batches.</strong>
        </p>
        {already}
      </Notice>
    );
  const batchName = `Batch ${formatCount(end.batch + 1)} of ${formatCount(batches.length)}`;
  if (end.kind === 'unreachable')
    return (
      <ErrorNotice error={end.error} title={`${batchName} got no answer`}>
        <p>It may or may not have been written. Sending it again is safe: it carries the same Idempotency-Key, so the service writes it once.</p>
        {already}
      </ErrorNotice>
    );
  return (
    <ErrorNotice error={end.error} title={`${batchName} was refused, and nothing of it was written`}>
      {end.rows.length > 0 && (
        <ul class="import-problems">
          {end.rows.map((row) => (
            <li key={`${row.line} ${row.field ?? ''}`}>
              <strong>Line {formatCount(row.line)}</strong>
              {row.field && (
                <>
                  {' '}
                  (<code>{row.field}</code>)
                </>
              )}
              : {row.message}
            </li>
          ))}
        </ul>
      )}
      {already}
      {progress.imported > 0 && !end.resendable && (
        <p>Before importing this file again, remove the lines already imported, or they are created a second time.</p>
      )}
    </ErrorNotice>
  );
}
