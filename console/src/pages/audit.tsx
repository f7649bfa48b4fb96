// The audit log: who changed what (keys, apps, webhooks, schedules, sessions), oldest first, paged,
// filtered by type.
import type { AuditRecord } from '@devdata/client';
import { useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { Busy, ErrorNotice } from '../components/feedback';
import { JsonBlock, Time } from '../components/format';
import { Page } from '../components/page';

import { publicClient } from '../connection';
import { useClient } from '../connection-context';
import { useLoad } from '../hooks';

const PAGE_SIZE = 50;

export function AuditPage() {
  return (
    <Page
      title="Audit log"
      intro="Every change to the account's keys, apps, webhooks and schedules, and who made it, oldest first."
      needs={['usage:read']}
      what="Reading the audit log"
    >
      <AuditView />
    </Page>
  );
}

function describeActor(actor: AuditRecord['actor']): string {
  switch (actor.kind) {
    case 'api_key':
      return `API key ${String(actor.id)}`;
    case 'oauth_access_token':
      return `app ${String(actor.clientId)}`;
    case 'developer_session':
      return 'developer session';
    case 'operator':
      return 'operator (CLI)';
    case 'system':
      return 'the service';
    default:
      return String(actor.kind);
  }
}

/** The audit types the service records, with `area.*` prefixes, from its capabilities. */
function typeFilters(types: string[]): string[] {
  const prefixes = [...new Set(types.map((type) => `${type.split('.')[0]}.*`))];
  return [...prefixes, ...types];
}

function AuditView() {
  const client = useClient();
  const capabilities = useLoad((signal) => publicClient.getCapabilities(undefined, { signal }), []);
  const auditTypes = ((capabilities.data?.features.audit as { types?: string[] } | undefined)?.types ?? []) as string[];
  const [typeInput, setTypeInput] = useState('');
  const [type, setType] = useState('');
  /** The `after` of each page shown so far: the last one is the current page. */
  const [cursors, setCursors] = useState<number[]>([0]);
  const after = cursors[cursors.length - 1] ?? 0;
  const page = useLoad((signal) => client.listAuditRecords({ query: { after, limit: PAGE_SIZE, type: type || undefined } }, { signal }), [client, after, type]);

  const apply = (event: Event) => {
    event.preventDefault();
    setCursors([0]);
    setType(typeInput);
  };
  return (
    <>
      <form class="filters" onSubmit={apply} aria-label="Filter the audit log">
        <div class="field">
          <label for="audit-type">Type</label>
          <select id="audit-type" value={typeInput} onChange={(event) => setTypeInput(event.currentTarget.value)}>
            <option value="">All types</option>
            {typeFilters(auditTypes).map((option) => (
              <option key={option} value={option}>
                {option}
              </option>
            ))}
          </select>
        </div>
        <div class="actions">
          <button type="submit" class="secondary">
            Apply filter
          </button>
        </div>
      </form>
      {page.loading && <Busy label="Loading the audit log" />}
      <ErrorNotice error={page.error} title="The audit log could not be read" />
      <ErrorNotice error={capabilities.error} title="The audit types could not be read" />
      {page.data && (
        <>
          <DataList
            caption={`Audit records${type ? ` of type ${type}` : ''}, oldest first`}
            rows={page.data.data}
            rowKey={(record) => record.id}
            rowAttributes={(record) => ({ 'data-audit-id': record.id })}
            empty={`No records${type ? ' of this type' : ''}${after > 0 ? ' after the previous page' : ''}.`}
            columns={[
              { label: 'Time', cell: (record) => <Time value={record.createdAt} /> },
              { label: 'Type', role: 'name', cell: (record) => <code>{record.type}</code> },
              { label: 'Actor', cell: (record) => describeActor(record.actor) },
              { label: 'Target', cell: (record) => (record.target ? `${String(record.target.type)} ${String(record.target.id)}` : '—') },
              {
                label: 'Details',
                cell: (record) => (
                  <details>
                    <summary>Data</summary>
                    <JsonBlock value={record.data} label={`Data of audit record ${record.id}`} />
                  </details>
                ),
              },
            ]}
          />
          <nav class="pager" aria-label="Pages">
            <button type="button" class="secondary" disabled={cursors.length === 1} onClick={() => setCursors(cursors.slice(0, -1))}>
              Previous page
            </button>
            <span>Page {cursors.length}</span>
            <button type="button" class="secondary" disabled={!page.data.hasMore} onClick={() => page.data && setCursors([...cursors, page.data.cursor])}>
              Next page
            </button>
          </nav>
        </>
      )}
    </>
  );
}
