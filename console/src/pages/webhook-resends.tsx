// Sending again in bulk (api-decisions §14): every delivery that ended failed since a time (recover),
// and every retained event after a cursor (replay), each as new deliveries with X-Service-Replay.
import { DevdataError, type Webhook } from '@devdata/client';
import { useState } from 'preact/hooks';
import { ErrorNotice, Notice } from '../components/feedback';
import { FieldError, fieldProps } from '../components/field-error';
import { FormActions } from '../components/forms';
import { useClient } from '../connection-context';
import { useAction } from '../hooks';

const DAY_MS = 86_400_000;
const QUEUE_CAP = 1000;

/** A time as a `datetime-local` input holds it: the browser's local time, to the minute. */
function localInput(ms: number): string {
  return new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

/** Both tools; `onQueued` is told when new deliveries were queued (the log reads itself again). */
export function ResendTools({ webhook, onQueued }: { webhook: Webhook; onQueued: () => void }) {
  return (
    <div class="resend-tools">
      <RecoverForm webhook={webhook} onQueued={onQueued} />
      <ReplayForm webhook={webhook} onQueued={onQueued} />
    </div>
  );
}

function RecoverForm({ webhook, onQueued }: { webhook: Webhook; onQueued: () => void }) {
  const client = useClient();
  const [since, setSince] = useState(() => localInput(Date.now() - DAY_MS));
  const [queued, setQueued] = useState<number | undefined>(undefined);
  const action = useAction();
  const id = `recover-${webhook.id}`;
  const submit = async (event: Event) => {
    event.preventDefault();
    setQueued(undefined);
    const result = await action.run(async () => {
      const time = new Date(since);
      if (since === '' || Number.isNaN(time.getTime())) throw new Error('Choose the time to recover from');
      return client.recoverWebhook({ path: { id: webhook.id }, body: { since: time.toISOString() } });
    });
    if (result) {
      setQueued(result.queued);
      if (result.queued > 0) onQueued();
    }
  };
  return (
    <form class="form resend-tool" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h4 id={`${id}-title`}>Recover failed deliveries</h4>
      <p class="hint">
        Sends again, as new deliveries, every delivery that ended failed at or after this time: after the receiver was down, or once the webhook is resumed.
      </p>
      <div class="field">
        <label for={`${id}-since`}>Failed since</label>
        <input
          id={`${id}-since`}
          type="datetime-local"
          required
          value={since}
          onInput={(event) => setSince(event.currentTarget.value)}
          {...fieldProps(action.error, '/since', `${id}-since`, `${id}-since-hint`)}
        />
        <span class="hint" id={`${id}-since-hint`}>
          Your local time; 24 hours ago to begin with.
        </span>
        <FieldError error={action.error} path="/since" id={`${id}-since`} />
      </div>
      <ErrorNotice error={action.error} title="Nothing was recovered" />
      {queued !== undefined && (
        <Notice kind="success">
          {queued === 0 ? (
            'No delivery ended failed since then: nothing was queued.'
          ) : (
            <>
              Queued {plural(queued, 'new delivery', 'new deliveries')}
              {queued >= QUEUE_CAP ? ' (the queue is full: recover again later for the rest)' : ''}.
            </>
          )}
        </Notice>
      )}
      <FormActions busy={action.busy} label="Recover failed deliveries" busyLabel="Recovering…" needs={['webhooks:manage']} />
    </form>
  );
}

function ReplayForm({ webhook, onQueued }: { webhook: Webhook; onQueued: () => void }) {
  const client = useClient();
  const [after, setAfter] = useState('');
  const [until, setUntil] = useState('');
  const [result, setResult] = useState<{ queued: number; skipped: number } | undefined>(undefined);
  const action = useAction();
  const id = `replay-${webhook.id}`;
  const expired = action.error instanceof DevdataError && action.error.code === 'cursor_expired' ? action.error.oldestCursor : undefined;
  const submit = async (event: Event) => {
    event.preventDefault();
    setResult(undefined);
    const replayed = await action.run(() =>
      client.replayWebhook({ path: { id: webhook.id }, body: { after: Number(after), ...(until.trim() === '' ? {} : { until: Number(until) }) } }),
    );
    if (replayed) {
      setResult(replayed);
      if (replayed.queued > 0) onQueued();
    }
  };
  return (
    <form class="form resend-tool" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h4 id={`${id}-title`}>Replay from a cursor</h4>
      <p class="hint">
        Sends again, as new deliveries, every retained event after the cursor that this webhook subscribes to: for events it missed while it was stopped, or a
        receiver that lost what it stored.
      </p>
      <div class="field-row">
        <div class="field">
          <label for={`${id}-after`}>After event #</label>
          <input
            id={`${id}-after`}
            type="number"
            inputMode="numeric"
            min={0}
            step={1}
            required
            value={after}
            onInput={(event) => setAfter(event.currentTarget.value)}
            {...fieldProps(action.error, '/after', `${id}-after`, `${id}-after-hint`)}
          />
          <span class="hint" id={`${id}-after-hint`}>
            The cursor: this event is not sent, the ones after it are.
          </span>
          <FieldError error={action.error} path="/after" id={`${id}-after`} />
        </div>
        <div class="field">
          <label for={`${id}-until`}>Until event # (optional)</label>
          <input
            id={`${id}-until`}
            type="number"
            inputMode="numeric"
            min={0}
            step={1}
            value={until}
            placeholder="the newest"
            onInput={(event) => setUntil(event.currentTarget.value)}
            {...fieldProps(action.error, '/until', `${id}-until`)}
          />
          <FieldError error={action.error} path="/until" id={`${id}-until`} />
        </div>
      </div>
      {expired !== undefined ? (
        <ErrorNotice error={action.error} title="Nothing was replayed">
          <p>
            Events up to #{expired} are no longer kept (the service keeps a limited number per account): the oldest cursor that still works is {expired}.
          </p>
          <button type="button" class="secondary" onClick={() => setAfter(String(expired))}>
            Use cursor {expired}
          </button>
        </ErrorNotice>
      ) : (
        <ErrorNotice error={action.error} title="Nothing was replayed" />
      )}
      {result && (
        <Notice kind={result.skipped > 0 ? 'warning' : 'success'}>
          {result.queued === 0 && result.skipped === 0 ? (
            'No retained event in that range matches this webhook: nothing was queued.'
          ) : (
            <>
              Queued {plural(result.queued, 'new delivery', 'new deliveries')}; skipped {result.skipped}
              {result.skipped > 0 ? ` (the queue holds at most ${QUEUE_CAP.toLocaleString('en')} pending: replay from a later cursor once it drains)` : ''}.
            </>
          )}
        </Notice>
      )}
      {/* It sends the events' contents again, so the API asks for events:read as well. */}
      <FormActions busy={action.busy} label="Replay events" busyLabel="Replaying…" needs={['webhooks:manage', 'events:read']} />
    </form>
  );
}
