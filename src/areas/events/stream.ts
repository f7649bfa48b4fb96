// Server-Sent Events: each stream first replays the log from its cursor, then follows the bus.
// It subscribes before it reads, and it tracks the last event id it has accounted for: an event
// that arrives twice is skipped, and one that arrives ahead of a missing id makes it re-read the
// log up to that id. So the seam between replay and live has no gap and no duplicate, whatever
// order notifications arrive in.
import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { Credential } from '../../platform/credential.js';
import { rateLimited } from '../../domain-errors.js';
import { matchesTypeFilter, type TypeFilter } from '../../platform/type-filter.js';
import { eventJson, type Event } from './event.js';
import type { EventReads } from './read-side.js';

const REPLAY_PAGE = 500;
/** A client this far behind is dropped; it reconnects with Last-Event-ID and replays from the log. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

const frames = new WeakMap<Event, string>();

/** The SSE message of an event, built once however many streams send it. */
function frameOf(event: Event): string {
  let frame = frames.get(event);
  if (frame === undefined) {
    frame = `id: ${event.id}\nevent: ${event.type}\ndata: ${eventJson(event)}\n\n`;
    frames.set(event, frame);
  }
  return frame;
}

class EventStream {
  private lastSeen = 0;
  /** The id last written in a message, so a filtered stream can move its resume point on. */
  private lastSentId = 0;
  private catchingUp = true;
  private readonly pending: Event[] = [];
  private unsubscribe: () => void = () => {};
  closed = false;

  constructor(
    private readonly events: EventReads,
    readonly credential: Credential,
    private readonly type: TypeFilter | undefined,
    private readonly response: ServerResponse,
    private readonly log: FastifyBaseLogger,
    private readonly onClose: () => void,
  ) {}

  get accountId(): string {
    return this.credential.accountId;
  }

  async start(after: number): Promise<void> {
    this.unsubscribe = this.events.bus.subscribe(this.accountId, (event) => this.receive(event));
    this.lastSeen = after;
    // The stream names its starting point at once (an id without data dispatches nothing), so a
    // client that connected without a cursor, and so started at the newest event, can resume from
    // here without a gap even if it is cut off before its first event.
    this.write(`: connected\nid: ${after}\n\n`);
    this.lastSentId = after;
    const newest = await this.events.newestId(this.accountId);
    await this.replay(newest);
    this.catchingUp = false;
    await this.drain();
  }

  private receive(event: Event): void {
    if (this.closed) return;
    // The common case, the next event of a stream that is live: sent at once, without a promise
    // (this runs once per stream for every event: a thousand streams, a thousand times).
    if (!this.catchingUp && this.pending.length === 0 && event.id === this.lastSeen + 1) {
      this.lastSeen = event.id;
      if (matchesTypeFilter(event.type, this.type)) this.send(event);
      return;
    }
    this.pending.push(event);
    if (!this.catchingUp) {
      this.drain().catch((error: unknown) => this.log.warn({ err: error }, 'event stream ended: reading the log failed'));
    }
  }

  private async drain(): Promise<void> {
    this.catchingUp = true;
    try {
      while (!this.closed && this.pending.length > 0) {
        const event = this.pending.shift() as Event;
        if (event.id <= this.lastSeen) continue;
        if (event.id === this.lastSeen + 1) {
          this.lastSeen = event.id;
          if (matchesTypeFilter(event.type, this.type)) this.send(event);
        } else {
          await this.replay(event.id);
        }
      }
    } catch (error) {
      // The client reconnects with Last-Event-ID and replays what it missed.
      this.close();
      throw error;
    } finally {
      this.catchingUp = false;
    }
  }

  /** Sends what the log holds after lastSeen up to `upTo`, and accounts for everything up to it. */
  private async replay(upTo: number): Promise<void> {
    while (!this.closed && this.lastSeen < upTo) {
      const page = await this.events.read(this.accountId, { after: this.lastSeen, upTo, limit: REPLAY_PAGE, type: this.type });
      if ((await this.events.expiredDuringRead(this.accountId, this.lastSeen, upTo, page[0]?.id)) !== undefined) {
        // Retention deleted events this stream has not sent: it ends, and its reconnect is answered 410.
        this.log.info({ accountId: this.accountId, lastEventId: this.lastSeen }, 'event stream ended: its cursor fell out of retention while it replayed');
        this.close();
        return;
      }
      for (const event of page) this.send(event);
      this.lastSeen = page.length < REPLAY_PAGE ? upTo : (page.at(-1) as Event).id;
    }
  }

  private send(event: Event): void {
    this.write(frameOf(event));
    this.lastSentId = event.id;
  }

  /**
   * A comment line keeps proxies and clients from timing out. A filtered stream also carries the
   * id it has read up to (a message without data sets the client's Last-Event-ID and dispatches
   * nothing), so a reconnect resumes from there rather than from an old match.
   */
  heartbeat(): void {
    if (this.type && this.lastSeen > this.lastSentId && !this.catchingUp) {
      this.write(`: keep-alive\nid: ${this.lastSeen}\n\n`);
      this.lastSentId = this.lastSeen;
    } else {
      this.write(': keep-alive\n\n');
    }
  }

  write(chunk: string): void {
    if (this.closed) return;
    if (this.response.writableLength > MAX_BUFFERED_BYTES) {
      this.close();
      return;
    }
    this.response.write(chunk);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    this.response.end();
    this.onClose();
  }
}

/** How often an open stream gets a comment line that keeps it open. */
export const STREAM_HEARTBEAT_MS = 15_000;

/** Open streams of this process: the per-account cap, heartbeats and shutdown. */
export class StreamHub {
  private readonly streams = new Set<EventStream>();
  private readonly perAccount = new Map<string, number>();
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    private readonly events: EventReads,
    private readonly limitPerAccount: number,
    /** The ids, among these credentials, that are still valid (not revoked, not expired). */
    private readonly stillValid: (credentials: Credential[]) => Promise<Set<string>>,
    heartbeatMs = STREAM_HEARTBEAT_MS,
  ) {
    // One timer for every stream: heartbeats, and ending streams whose credential has ended.
    this.heartbeat = setInterval(() => {
      for (const stream of this.streams) stream.heartbeat();
      void this.closeEnded();
    }, heartbeatMs);
    this.heartbeat.unref();
  }

  /** Ends the streams of credentials that were revoked or expired (here or in another process). */
  async closeEnded(): Promise<void> {
    const streams = [...this.streams];
    if (streams.length === 0) return;
    try {
      const valid = await this.stillValid(streams.map((stream) => stream.credential));
      for (const stream of streams) if (!valid.has(stream.credential.id)) stream.close();
    } catch {
      // Storage trouble: the streams are checked again at the next heartbeat.
    }
  }

  /** Ends at once the streams opened with this credential, or under this OAuth grant (ended in this process). */
  closeFor(credentialId: string): void {
    for (const stream of this.streams) if (stream.credential.id === credentialId || stream.credential.grant?.id === credentialId) stream.close();
  }

  get size(): number {
    return this.streams.size;
  }

  async open(reply: FastifyReply, options: { credential: Credential; after: number; type?: TypeFilter }): Promise<void> {
    const { credential } = options;
    const { accountId } = credential;
    const open = this.perAccount.get(accountId) ?? 0;
    if (open >= this.limitPerAccount) {
      throw rateLimited(`At most ${this.limitPerAccount} event streams may be open per account`, 5);
    }
    this.perAccount.set(accountId, open + 1);

    reply.hijack();
    const response = reply.raw;
    response.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
    });
    response.flushHeaders();

    const stream = new EventStream(this.events, credential, options.type, response, reply.log, () => {
      this.streams.delete(stream);
      const left = (this.perAccount.get(accountId) ?? 1) - 1;
      if (left > 0) this.perAccount.set(accountId, left);
      else this.perAccount.delete(accountId);
    });
    this.streams.add(stream);
    reply.request.raw.on('close', () => stream.close());
    response.on('error', () => stream.close());
    try {
      await stream.start(options.after);
    } catch (error) {
      reply.log.error({ err: error }, 'event stream failed');
      stream.close();
    }
  }

  /** Ends every stream (server shutdown); clients reconnect elsewhere with Last-Event-ID. */
  closeAll(): void {
    clearInterval(this.heartbeat);
    for (const stream of this.streams) stream.close();
  }
}
