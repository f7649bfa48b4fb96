// Sends due webhook deliveries with bounded concurrency. Deliveries are claimed with a lease, so
// several processes share the work and a crashed process's claims simply run out; one slow or
// failing receiver holds at most its own share of the attempts (IN_FLIGHT_PER_WEBHOOK), never
// the queue.
import type { FastifyBaseLogger } from 'fastify';
import type { WebhookAttempts } from '../areas/webhooks/attempts.js';

/** The least time between two claims of one process (bench/README.md, "Webhook deliveries"). */
const POLL_SPACING_MS = 5;

export class WebhookDispatcher {
  private readonly inFlight = new Set<Promise<void>>();
  /** Attempts under way by webhook id. */
  private readonly busy = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  /** A poll asked for: the attempts that end before it runs share it. */
  private scheduled: NodeJS.Timeout | undefined;
  private lastPollAt = 0;
  private polling: Promise<void> | undefined;
  private pollAgain = false;
  private stopped = true;
  private sent = 0;
  /** Counted, not described: the status body must not reveal infrastructure details. */
  private failures = 0;
  private lastFailureAt: string | null = null;

  constructor(
    private readonly webhooks: WebhookAttempts,
    private readonly log: FastifyBaseLogger,
    private readonly options: { concurrency: number; pollIntervalMs: number },
  ) {}

  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.wake(), this.options.pollIntervalMs);
    this.timer.unref();
    this.wake();
  }

  /** Looks for due deliveries now (after a commit that queued some, or a finished send). */
  wake(): void {
    if (this.stopped) return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    if (this.scheduled) return;
    // Polls at most every POLL_SPACING_MS: at a high rate each claims the attempts that ended meanwhile.
    const wait = Math.max(0, this.lastPollAt + POLL_SPACING_MS - performance.now());
    this.scheduled = setTimeout(() => {
      this.scheduled = undefined;
      if (this.stopped) return;
      this.lastPollAt = performance.now();
      this.polling = this.poll().finally(() => {
        this.polling = undefined;
        if (this.pollAgain) {
          this.pollAgain = false;
          this.wake();
        }
      });
    }, wait);
  }

  private async poll(): Promise<void> {
    const room = this.options.concurrency - this.inFlight.size;
    if (room <= 0) return;
    try {
      const due = await this.webhooks.claimDue(room, this.busy);
      for (const delivery of due) {
        this.busy.set(delivery.webhookId, (this.busy.get(delivery.webhookId) ?? 0) + 1);
        const attempt = this.webhooks
          .attempt(delivery)
          .then(() => void this.sent++)
          .catch((error: unknown) => {
            this.noteFailure();
            this.log.error({ err: error, deliveryId: delivery.id }, 'recording a webhook attempt failed; its lease will run out and it is retried');
          })
          .finally(() => {
            const left = (this.busy.get(delivery.webhookId) ?? 1) - 1;
            if (left > 0) this.busy.set(delivery.webhookId, left);
            else this.busy.delete(delivery.webhookId);
            this.inFlight.delete(attempt);
            this.wake();
          });
        this.inFlight.add(attempt);
      }
    } catch (error) {
      this.noteFailure();
      this.log.error({ err: error }, 'claiming webhook deliveries failed');
    }
  }

  private noteFailure(): void {
    this.failures++;
    this.lastFailureAt = new Date().toISOString();
  }

  /** Stops claiming and waits for the attempts under way (each ends within its 10 s timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.scheduled);
    await this.polling;
    await Promise.allSettled([...this.inFlight]);
  }

  report(): Record<string, unknown> {
    return {
      running: !this.stopped,
      inFlight: this.inFlight.size,
      attemptsMade: this.sent,
      concurrency: this.options.concurrency,
      failures: this.failures,
      lastFailureAt: this.lastFailureAt,
    };
  }
}
