// One delivery opened: each attempt with its time, answer and duration, the headers sent (signatures
// included) and the start of the receiver's answer as plain text.
import type { WebhookDelivery } from '@devdata/client';
import { Time } from '../components/format';

type Attempt = WebhookDelivery['attempts'][number];

/** The id of a delivery's opened attempts, for the button that opens them (aria-controls). */
export function attemptsId(delivery: WebhookDelivery): string {
  return `attempts-${delivery.id}`;
}

/** What an attempt got: the HTTP status, or the error when there was no answer. */
export function answerOf(attempt: Attempt): string {
  if (attempt.responseStatus !== null) return `HTTP ${attempt.responseStatus}`;
  return attempt.error ?? 'no answer';
}

/** An attempt without an error got a 2xx answer. */
function succeeded(attempt: Attempt): boolean {
  return attempt.error === null;
}

/** A delivery in words, for the names of its buttons and its opened attempts. */
export function deliveryLabel(delivery: WebhookDelivery): string {
  if (delivery.test) return 'test delivery';
  return `${delivery.replay ? 'replayed ' : ''}delivery of event ${delivery.eventId}`;
}

export function DeliveryAttempts({ delivery }: { delivery: WebhookDelivery }) {
  return (
    <section class="inspector" id={attemptsId(delivery)} aria-label={`Attempts of the ${deliveryLabel(delivery)}`}>
      <p class="small muted">
        Delivery <code>{delivery.id}</code> (the <code>webhook-id</code> and <code>X-Service-Delivery-Id</code> a receiver sees)
        {delivery.completedAt && (
          <>
            , completed <Time value={delivery.completedAt} />
          </>
        )}
        {delivery.nextAttemptAt && (
          <>
            , next attempt <Time value={delivery.nextAttemptAt} />
          </>
        )}
        .
      </p>
      {delivery.attempts.length === 0 ? (
        <p class="empty">Not attempted yet.</p>
      ) : (
        <ol class="plain attempt-list">
          {delivery.attempts.map((attempt) => (
            <li key={attempt.attempt} class="attempt" data-attempt={attempt.attempt}>
              <h4>
                Attempt {attempt.attempt} <span class={succeeded(attempt) ? 'pill pill-ok' : 'pill pill-bad'}>{answerOf(attempt)}</span>
              </h4>
              <dl class="facts">
                <dt>Sent</dt>
                <dd>
                  <Time value={attempt.at} />
                </dd>
                <dt>Duration</dt>
                <dd>{attempt.durationMs} ms</dd>
                {attempt.error !== null && (
                  <>
                    <dt>Error</dt>
                    <dd>{attempt.error}</dd>
                  </>
                )}
              </dl>
              <details class="headers-sent">
                <summary>
                  Request headers ({Object.keys(attempt.requestHeaders).length})<span class="visually-hidden"> of attempt {attempt.attempt}</span>
                </summary>
                <dl class="headers">
                  {Object.entries(attempt.requestHeaders).map(([name, value]) => (
                    <div key={name}>
                      <dt>{name}</dt>
                      <dd>{value}</dd>
                    </div>
                  ))}
                </dl>
              </details>
              <ResponseExcerpt attempt={attempt} />
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

/** The answer's first 1 KiB, as text: Preact sets it as a text node, so markup in it is shown, never run. */
function ResponseExcerpt({ attempt }: { attempt: Attempt }) {
  if (attempt.responseBody === null) return <p class="muted small">No answer to show.</p>;
  if (attempt.responseBody === '') return <p class="muted small">The answer's body was empty.</p>;
  return (
    <figure class="response-excerpt">
      <figcaption class="small muted">The answer's body (its first 1 KiB) to attempt {attempt.attempt}:</figcaption>
      {/* Focusable: a long answer scrolls inside it. */}
      <pre tabIndex={0}>{attempt.responseBody}</pre>
    </figure>
  );
}
