// What an import file holds, before anything is sent: its first rows as the operations they become
// (create, or update by id), and the lines that cannot be read, with why.
import type { ImportRow, ImportRowError } from '@devdata/client';
import { DataList } from '../components/data-list';
import { formatState } from '../components/format';
import { formatCount } from './resource-import-run';

/** Rows of the file shown before importing; the rest are counted. */
const PREVIEW_ROWS = 10;
/** Unreadable lines listed one by one; the rest are counted. */
const LISTED_ERRORS = 20;

function Unchanged() {
  return <span class="muted">unchanged</span>;
}

export function RowsPreview({ rows }: { rows: readonly ImportRow[] }) {
  if (rows.length === 0) return null;
  const shown = rows.slice(0, PREVIEW_ROWS);
  return (
    <DataList
      class="import-preview"
      caption={shown.length === rows.length ? `All ${formatCount(rows.length)} rows` : `The first ${shown.length} of ${formatCount(rows.length)} rows`}
      rows={shown}
      rowKey={(row) => row.line}
      rowAttributes={(row) => ({ 'data-line': String(row.line) })}
      empty="No rows."
      columns={[
        { label: 'Line', cell: (row) => row.line },
        { label: 'Name', role: 'name', cell: (row) => row.operation.name ?? <Unchanged /> },
        { label: 'Type', cell: (row) => (row.operation.op === 'create' ? row.operation.type : <span class="muted">kept</span>) },
        {
          label: 'State',
          role: 'value',
          class: 'state',
          cell: (row) => (row.operation.state === undefined ? <Unchanged /> : formatState(row.operation.state)),
        },
        {
          label: 'Create or update',
          cell: (row) =>
            row.operation.op === 'create' ? (
              'create'
            ) : (
              <>
                update <code>{row.operation.id}</code>
                {row.operation.ifMatch !== undefined && <> if at version {row.operation.ifMatch}</>}
              </>
            ),
        },
      ]}
    />
  );
}

export function UnreadableRows({ errors }: { errors: readonly ImportRowError[] }) {
  if (errors.length === 0) return null;
  const listed = errors.slice(0, LISTED_ERRORS);
  return (
    <div class="notice notice-warning import-unreadable">
      <p>
        <strong>{errors.length === 1 ? 'One line cannot be read' : `${formatCount(errors.length)} lines cannot be read`}</strong> and would not be imported:
      </p>
      <ul>
        {listed.map((error) => (
          <li key={error.line}>
            Line {formatCount(error.line)}: {error.message}
          </li>
        ))}
        {errors.length > listed.length && <li>and {formatCount(errors.length - listed.length)} more.</li>}
      </ul>
    </div>
  );
}
