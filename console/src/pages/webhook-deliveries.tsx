// A webhook's delivery inspector: its deliveries newest first, filtered by status and read a page at
// a time (before=<the last one shown>), kept current while open; each opens to its attempts. A
// delivery is retried from its row; recover and replay send many again (webhook-resends.tsx).
import type { Webhook, WebhookDelivery } from '@devdata/client';
import { useEffect, useRef, useState } from 'preact/hooks';
import { DataList } from '../components/data-list';
import { Busy, ErrorNotice } from '../components/feedback';
import { Time } from '../components/format';
import { useClient } from '../connection-context';
import { useAction, useInterval } from '../hooks';
import { Link } from '../router';
import { answerOf, attemptsId, DeliveryAttempts, deliveryLabel } from './webhook-attempts';
import { ResendTools } from './webhook-resends';

const LOG_REFRESH_MS = 2000;
/** Deliveries read by "Load more". */
const PAGE = 20;
/** A refresh reads again at most this many of the newest shown; older ones shown stay as they were read. */
const REFRESH_MAX = 100;
const STATUSES = ['pending', 'succeeded', 'failed'] as const;
type Status = (typeof STATUSES)[number];

interface Shown {
  items: WebhookDelivery[];
  hasMore: boolean;
}

/**
 * The newest deliveries read again (`page`, `limit` asked) over what was shown: a full page may
 * have pushed older ones down, which stay after it; ones it no longer reaches come back with Load more.
 */
function refreshed(shown: Shown | undefined, page: WebhookDelivery[], limit: number): Shown {
  if (page.length < limit) return { items: page, hasMore: false };
  const items = shown?.items ?? [];
  const last = page.at(-1)?.id;
  const at = items.findIndex((delivery) => delivery.id === last);
  const ids = new Set(page.map((delivery) => delivery.id));
  const tail = at >= 0 ? items.slice(at + 1).filter((delivery) => !ids.has(delivery.id)) : [];
  return { items: [...page, ...tail], hasMore: tail.length > 0 ? (shown?.hasMore ?? true) : true };
}

function StatusPill({ status }: { status: WebhookDelivery['status'] }) {
  return <span class={`pill ${status === 'succeeded' ? 'pill-ok' : status === 'failed' ? 'pill-bad' : ''}`}>{status}</span>;
}

/**
 * `focus` names a delivery just queued elsewhere (a test): the filter is cleared, the log read
 * again, and its row marked.
 */
export function DeliveryLog({ webhook, focus }: { webhook: Webhook; focus?: { id: string; at: number } | undefined }) {
  const client = useClient();
  const [status, setStatus] = useState<Status | ''>('');
  const [shown, setShown] = useState<Shown | undefined>(undefined);
  const [readError, setReadError] = useState<unknown>(undefined);
  const [loadingMore, setLoadingMore] = useState(false);
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const retry = useAction();
  /** Each read takes a number; only the latest read's answer is shown (a filter changed, a page was added meanwhile). */
  const sequence = useRef(0);
  const refreshing = useRef(false);
  const webhookId = webhook.id;

  const read = (query: { limit: number; before?: string }, forStatus: Status | '') =>
    client.listWebhookDeliveries({ path: { id: webhookId }, query: { ...query, ...(forStatus === '' ? {} : { status: forStatus }) } });

  /**
   * Reads the newest again, as many as are shown (at least a page), unless a read is under way;
   * a filter change reads at once (`fresh`), from nothing shown.
   */
  const refresh = async (fresh?: { status: Status | '' }) => {
    if (!fresh && (loadingMore || refreshing.current)) return;
    const forStatus = fresh ? fresh.status : status;
    const from = fresh ? undefined : shown;
    refreshing.current = true;
    const mine = ++sequence.current;
    const limit = Math.min(REFRESH_MAX, Math.max(PAGE, from?.items.length ?? 0));
    try {
      const page = (await read({ limit }, forStatus)).data;
      if (mine !== sequence.current) return;
      setShown(refreshed(from, page, limit));
      setReadError(undefined);
    } catch (error) {
      if (mine === sequence.current) setReadError(error);
    } finally {
      refreshing.current = false;
    }
  };

  const loadMore = async () => {
    const last = shown?.items.at(-1);
    if (!shown || !last) return;
    const mine = ++sequence.current;
    setLoadingMore(true);
    try {
      const page = (await read({ limit: PAGE, before: last.id }, status)).data;
      if (mine !== sequence.current) return;
      const ids = new Set(shown.items.map((delivery) => delivery.id));
      setShown({ items: [...shown.items, ...page.filter((delivery) => !ids.has(delivery.id))], hasMore: page.length === PAGE });
      setReadError(undefined);
    } catch (error) {
      if (mine === sequence.current) setReadError(error);
    } finally {
      setLoadingMore(false);
    }
  };

  const changeStatus = (next: Status | '') => {
    setStatus(next);
    setShown(undefined);
    // A read under way for the old filter is not shown (each read takes a new number).
    void refresh({ status: next });
  };

  // The first read, and again for a delivery queued elsewhere.
  useEffect(() => {
    if (focus && status !== '') changeStatus('');
    else void refresh();
  }, [client, webhookId, focus?.id, focus?.at]);
  // Kept current while open: deliveries happen in the background.
  useInterval(() => void refresh(), LOG_REFRESH_MS);

  const toggle = (id: string) => {
    const next = new Set(open);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setOpen(next);
  };

  const retryDelivery = async (delivery: WebhookDelivery) => {
    const queued = await retry.run(() => client.retryWebhookDelivery({ path: { id: webhookId, deliveryId: delivery.id } }));
    if (!queued) return;
    setShown((current) => current && { ...current, items: current.items.map((item) => (item.id === queued.id ? queued : item)) });
    void refresh();
  };

  const selectId = `delivery-status-${webhookId}`;
  return (
    <div class="delivery-log">
      <h3>Deliveries</h3>
      <div class="filters">
        <div class="field">
          <label for={selectId}>Status</label>
          <select id={selectId} value={status} onChange={(event) => changeStatus(event.currentTarget.value as Status | '')}>
            <option value="">Any status</option>
            {STATUSES.map((value) => (
              <option key={value} value={value}>
                {value}
              </option>
            ))}
          </select>
        </div>
      </div>
      {shown === undefined && readError === undefined && <Busy label="Loading deliveries" />}
      <ErrorNotice error={readError} title="The deliveries could not be read" />
      <ErrorNotice error={retry.error} title="The delivery was not retried" />
      {shown && (
        <DataList
          class="deliveries"
          caption={`${status === '' ? 'Deliveries' : `Deliveries that are ${status}`}, newest first (refreshed every ${LOG_REFRESH_MS / 1000} s)`}
          rows={shown.items}
          rowKey={(delivery) => delivery.id}
          rowAttributes={(delivery) => ({
            'data-delivery-id': delivery.id,
            ...(focus?.id === delivery.id ? { class: 'just-queued' } : {}),
          })}
          empty={status === '' ? 'No deliveries yet: they appear when a matching event happens, or send a test.' : `No ${status} deliveries.`}
          detail={(delivery) => open.has(delivery.id) && <DeliveryAttempts delivery={delivery} />}
          columns={[
            {
              label: 'Event',
              role: 'name',
              cell: (delivery) => (
                <>
                  {/* A test is no event of the log: nothing to link to. */}
                  {!delivery.test && (
                    <>
                      <Link to="events" show={delivery.eventId}>
                        #{delivery.eventId}
                      </Link>{' '}
                    </>
                  )}
                  <code>{delivery.eventType}</code>
                  {delivery.test && <span class="pill pill-note">test</span>}
                  {delivery.replay && <span class="pill pill-note">replay</span>}
                </>
              ),
            },
            { label: 'Status', role: 'value', cell: (delivery) => <StatusPill status={delivery.status} /> },
            {
              label: 'Attempts',
              cell: (delivery) => (
                <span class="attempts-cell">
                  <span class="attempt-count">{delivery.attempts.length}</span>
                  <button
                    type="button"
                    class="secondary compact"
                    aria-expanded={open.has(delivery.id)}
                    aria-controls={open.has(delivery.id) ? attemptsId(delivery) : undefined}
                    onClick={() => toggle(delivery.id)}
                  >
                    {open.has(delivery.id) ? 'Hide' : 'Inspect'}
                    <span class="visually-hidden"> attempts of the {deliveryLabel(delivery)}</span>
                  </button>
                </span>
              ),
            },
            {
              label: 'Response',
              class: 'response',
              cell: (delivery) => {
                const last = delivery.attempts.at(-1);
                return last ? (last.responseStatus ?? answerOf(last)) : '—';
              },
            },
            { label: 'Created', cell: (delivery) => <Time value={delivery.createdAt} /> },
            { label: 'Next attempt', cell: (delivery) => <Time value={delivery.nextAttemptAt} /> },
            {
              label: 'Actions',
              role: 'actions',
              cell: (delivery) =>
                delivery.status !== 'pending' && (
                  <button type="button" class="secondary" disabled={retry.busy} onClick={() => retryDelivery(delivery)}>
                    Retry<span class="visually-hidden"> {deliveryLabel(delivery)}</span>
                  </button>
                ),
            },
          ]}
        />
      )}
      {shown && (
        <div class="pager">
          <button type="button" class="secondary" onClick={loadMore} disabled={!shown.hasMore || loadingMore} aria-busy={loadingMore}>
            {loadingMore ? 'Loading…' : 'Load more deliveries'}
          </button>
          <span class="muted">{shown.hasMore ? `${shown.items.length} shown; older ones follow.` : `All ${shown.items.length} shown.`}</span>
        </div>
      )}
      <p class="hint">
        Retry sends a delivery again under its own id, its earlier attempts replaced. The service keeps the pending deliveries and the latest 500 completed
        ones.
      </p>
      <h3>Send again</h3>
      <ResendTools webhook={webhook} onQueued={() => void refresh()} />
    </div>
  );
}
