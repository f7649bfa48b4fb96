// The audit log: who changed what (keys, apps, webhooks, schedules, sessions), newest first by
// default, paged, filtered by type; the keys, apps and objects by their names, linked.
import type { AuditRecord } from '@devdata/client';
import { useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { Busy, ErrorNotice } from '../components/feedback';
import { JsonBlock, Time } from '../components/format';
import { Page } from '../components/page';
import { publicClient } from '../connection';
import { useClient } from '../connection-context';
import { useLoad } from '../hooks';
import { type Names, ObjectLink, type ObjectKind, type ObjectRef, useNames } from '../names';

const PAGE_SIZE = 50;
const ORDERS = { desc: 'Newest first', asc: 'Oldest first' } as const;
type Order = keyof typeof ORDERS;

/** The kinds of object an audit record's target can be that have a page (an account or a connection has none). */
const TARGET_KINDS: Record<string, ObjectKind> = { api_key: 'api_key', app: 'app', webhook: 'webhook', schedule: 'schedule' };

export function AuditPage() {
  return (
    <Page
      title="Audit log"
      intro="Every change to the account's keys, apps, webhooks and schedules, and who made it, newest first."
      needs={['usage:read']}
      what="Reading the audit log"
    >
      <AuditView />
    </Page>
  );
}

/** What the page names of a record: the key or app that acted, and the object it acted on. */
function refsOf(record: AuditRecord): ObjectRef[] {
  const refs: ObjectRef[] = [];
  if (record.actor.kind === 'api_key') refs.push({ kind: 'api_key', id: String(record.actor.id) });
  if (record.actor.kind === 'oauth_access_token') refs.push({ kind: 'client', id: String(record.actor.clientId) });
  const kind = record.target ? TARGET_KINDS[String(record.target.type)] : undefined;
  if (kind && record.target) refs.push({ kind, id: String(record.target.id) });
  return refs;
}

function Actor({ actor, names }: { actor: AuditRecord['actor']; names: Names }) {
  switch (actor.kind) {
    case 'api_key':
      return (
        <>
          key <ObjectLink names={names} kind="api_key" id={String(actor.id)} />
        </>
      );
    case 'oauth_access_token':
      return (
        <>
          app <ObjectLink names={names} kind="client" id={String(actor.clientId)} />
        </>
      );
    case 'developer_session':
      return <>developer session</>;
    case 'operator':
      return <>operator (CLI)</>;
    case 'system':
      return <>the service</>;
    default:
      return <>{String(actor.kind)}</>;
  }
}

function Target({ record, names }: { record: AuditRecord; names: Names }) {
  const target = record.target;
  if (!target) return <span class="muted">—</span>;
  const kind = TARGET_KINDS[String(target.type)];
  if (target.type === 'account') return <>the account</>;
  if (!kind) {
    return (
      <>
        {String(target.type).replace('_', ' ')} <code>{String(target.id)}</code>
      </>
    );
  }
  // A deleted object keeps the name its creation record wrote down.
  const recorded = typeof record.data.name === 'string' ? record.data.name : undefined;
  return <ObjectLink names={names} kind={kind} id={String(target.id)} fallback={recorded} />;
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
  const [orderInput, setOrderInput] = useState<Order>('desc');
  const [filter, setFilter] = useState<{ type: string; order: Order }>({ type: '', order: 'desc' });
  /** The `after` of each page shown so far: the last one is the current page (the same loop in either order). */
  const [cursors, setCursors] = useState<number[]>([0]);
  const after = cursors[cursors.length - 1] ?? 0;
  const page = useLoad(
    (signal) => client.listAuditRecords({ query: { after, limit: PAGE_SIZE, order: filter.order, type: filter.type || undefined } }, { signal }),
    [client, after, filter],
  );
  const names = useNames(page.data?.data.flatMap(refsOf) ?? []);

  const apply = (event: Event) => {
    event.preventDefault();
    setCursors([0]);
    setFilter({ type: typeInput, order: orderInput });
  };
  const { type, order } = filter;
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
        <div class="field">
          <label for="audit-order">Order</label>
          <select id="audit-order" value={orderInput} onChange={(event) => setOrderInput(event.currentTarget.value as Order)}>
            {Object.entries(ORDERS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
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
            caption={`Audit records${type ? ` of type ${type}` : ''}, ${ORDERS[order].toLowerCase()}`}
            rows={page.data.data}
            rowKey={(record) => record.id}
            rowAttributes={(record) => ({ 'data-audit-id': record.id })}
            empty={`No records${type ? ' of this type' : ''}${after > 0 ? ' after the previous page' : ''}.`}
            columns={[
              { label: 'Type', role: 'name', cell: (record) => <code>{record.type}</code> },
              { label: 'Time', role: 'value', cell: (record) => <Time value={record.createdAt} /> },
              { label: 'Actor', class: 'actor', cell: (record) => <Actor actor={record.actor} names={names} /> },
              { label: 'Target', class: 'target', cell: (record) => <Target record={record} names={names} /> },
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
              {order === 'desc' ? 'Newer' : 'Previous page'}
            </button>
            <span>Page {cursors.length}</span>
            <button type="button" class="secondary" disabled={!page.data.hasMore} onClick={() => page.data && setCursors([...cursors, page.data.cursor])}>
              {order === 'desc' ? 'Older' : 'Next page'}
            </button>
          </nav>
        </>
      )}
    </>
  );
}
