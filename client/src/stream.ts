// The live event stream as an async iterator that survives disconnects: it reconnects with
// Last-Event-ID, so no event is skipped, and drops any event at or below the last one it gave
// out, so none is repeated. 401, 403, 404 and 410 end it with a DevdataError instead of a retry.
import { DevdataError, errorFromResponse, explainExpiredCursor } from './errors.js';
import type { DevdataEvent } from './types.js';
import { parseSse } from './sse.js';
import { abortedError, backoffDelay, connectionError, resolveCredential, sleep, type Credential } from './transport.js';

export interface EventStreamOptions {
  /** Start after this event id. Without it the stream starts at the newest event: only new ones arrive. */
  after?: number;
  /** An exact event type, or a prefix ending in `.*` such as `custom.*`. */
  type?: string;
  /** Ends the iteration (the loop simply finishes). */
  signal?: AbortSignal;
  /** The first reconnect delay in ms, doubled (with jitter) while reconnecting fails, up to 30 s (default 500). */
  reconnectDelayMs?: number;
  /**
   * Told each time a connection is open. Events written from then on will arrive: the server fixed
   * the stream's starting point before it answered.
   */
  onConnect?: (info: { lastEventId: number | undefined; reconnected: boolean }) => void;
  /**
   * Told before each reconnect: why the connection ended (`error`, undefined when the server ended
   * the stream), where the stream resumes and how long it waits first (`delayMs`). `onConnect`
   * with `reconnected: true` follows once a connection is open again.
   */
  onReconnect?: (info: { attempt: number; lastEventId: number | undefined; error: DevdataError | undefined; delayMs: number }) => void;
}

interface StreamContext {
  baseUrl: string;
  credential: Credential | undefined;
  fetch: typeof fetch;
}

/** Statuses worth another connection: the service is busy, restarting or briefly unavailable. */
const TRANSIENT = (status: number) => status === 429 || status === 408 || status >= 500;

export class EventStream implements AsyncIterable<DevdataEvent> {
  /** The position the stream has reached: what it sends as Last-Event-ID when it reconnects. */
  lastEventId: number | undefined;
  private started = false;

  constructor(
    private readonly context: StreamContext,
    private readonly options: EventStreamOptions = {},
  ) {
    this.lastEventId = options.after;
  }

  [Symbol.asyncIterator](): AsyncIterator<DevdataEvent> {
    if (this.started) throw new Error('an EventStream can be iterated once; open another with streamEvents()');
    this.started = true;
    return this.follow();
  }

  private async *follow(): AsyncGenerator<DevdataEvent> {
    const { signal } = this.options;
    let failures = 0;
    let connections = 0;
    let lastError: DevdataError | undefined;
    while (!signal?.aborted) {
      if (failures > 0) {
        const wait = lastError?.status === 429 || lastError?.status === 503 ? (lastError.retryAfterSeconds ?? 0) * 1000 : 0;
        const delayMs = Math.max(wait, backoffDelay(failures, this.options.reconnectDelayMs ?? 500));
        this.options.onReconnect?.({ attempt: failures, lastEventId: this.lastEventId, error: lastError, delayMs });
        try {
          await sleep(delayMs, signal);
        } catch {
          return;
        }
      }
      // One controller per connection: the caller's signal, or the loop leaving, ends it.
      const connection = new AbortController();
      const abort = () => connection.abort();
      signal?.addEventListener('abort', abort, { once: true });
      try {
        const response = await this.connect(connection.signal);
        if (!response.ok) {
          const error = await errorFromResponse(response);
          if (!TRANSIENT(response.status)) throw explainExpiredCursor(error, this.lastEventId);
          lastError = error;
          failures++;
          continue;
        }
        this.options.onConnect?.({ lastEventId: this.lastEventId, reconnected: connections > 0 });
        connections++;
        failures = 0;
        lastError = undefined;
        for await (const message of parseSse(response.body as ReadableStream<Uint8Array>)) {
          const position = message.id !== undefined && /^\d+$/.test(message.id) ? Number(message.id) : undefined;
          if (!message.hasData) {
            // The opening id, or a filtered stream's heartbeat: where to resume from.
            if (position !== undefined && (this.lastEventId === undefined || position > this.lastEventId)) this.lastEventId = position;
            continue;
          }
          const event = JSON.parse(message.data) as DevdataEvent;
          if (this.lastEventId !== undefined && event.id <= this.lastEventId) continue;
          this.lastEventId = event.id;
          yield event;
        }
        // The server ended the stream (a restart, a slow reader): resume where it stopped.
        lastError = undefined;
        failures = 1;
      } catch (error) {
        if (signal?.aborted) return;
        if (error instanceof DevdataError) throw error;
        lastError = connectionError(this.context.baseUrl, error);
        failures++;
      } finally {
        signal?.removeEventListener('abort', abort);
        connection.abort();
      }
    }
  }

  private async connect(signal: AbortSignal): Promise<Response> {
    const url = new URL('/api/v1/events/stream', this.context.baseUrl);
    if (this.options.type !== undefined) url.searchParams.set('type', this.options.type);
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    const credential = await resolveCredential(this.context.credential);
    if (credential !== undefined) headers.authorization = `Bearer ${credential}`;
    if (this.lastEventId !== undefined) headers['last-event-id'] = String(this.lastEventId);
    if (signal.aborted) throw abortedError(signal);
    return this.context.fetch(url, { headers, signal });
  }
}
