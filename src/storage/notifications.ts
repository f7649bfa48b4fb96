// Cross-process notifications over PostgreSQL LISTEN/NOTIFY. A notification sent inside a
// transaction is delivered when (and only if) it commits, to every listening process.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { sql } from 'kysely';
import type { Executor } from './schema.js';

export interface Notifications {
  /** Queues `payload` on `channel`; listeners get it when `exec`'s transaction commits. */
  notify(exec: Executor, channel: string, payload: string): Promise<void>;
  /** Sends each payload on `channel` in one statement (outside a transaction: at once). */
  notifyMany(exec: Executor, channel: string, payloads: readonly string[]): Promise<void>;
  /**
   * Calls `onMessage` for each notification. The connection is re-established after a failure,
   * and `onReconnect` is called then: notifications sent meanwhile are lost, so the caller re-reads.
   * `onLost` is called as soon as the connection is known lost (before any reconnect).
   */
  listen(channel: string, onMessage: (payload: string) => void, onReconnect: () => void, onLost?: () => void): Promise<void>;
  close(): Promise<void>;
}

const RECONNECT_DELAY_MS = 1000;

/**
 * Several processes: when a copy of an account's data last had the account's newest id confirmed
 * by storage, so that a notification lost without the connection noticing (a half-open TCP
 * connection) delays a change by at most `everyMs` and a read.
 */
export class NewestIdCheck {
  private checkedAt = performance.now();
  private checking = false;

  /** Whether `everyMs` passed since the last confirmation and none is under way (asked on every read: no allocation). */
  due(everyMs: number): boolean {
    return !this.checking && performance.now() - this.checkedAt > everyMs;
  }

  /** Reads the newest id: `heard` it, or `failed` when storage could not say. */
  run(read: () => Promise<number>, heard: (newest: number) => void, failed: () => void): void {
    this.checking = true;
    const askedAt = performance.now();
    read().then(
      (newest) => {
        this.checking = false;
        this.checkedAt = askedAt;
        heard(newest);
      },
      () => {
        this.checking = false;
        failed();
      },
    );
  }
}

/** The listening connection's `application_name` in pg_stat_activity. */
export const NOTIFICATIONS_APPLICATION_NAME = 'devdata-notifications';

export class PostgresNotifications implements Notifications {
  private client: pg.Client | undefined;
  private readonly channels = new Map<string, { onMessage: (payload: string) => void; onReconnect: () => void; onLost?: () => void }>();
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(private readonly connectionString: string) {}

  async notify(exec: Executor, channel: string, payload: string): Promise<void> {
    await sql`select pg_notify(${channel}, ${payload})`.execute(exec);
  }

  async notifyMany(exec: Executor, channel: string, payloads: readonly string[]): Promise<void> {
    if (payloads.length === 0) return;
    // The listening connection is idle between notifications: sent there, the notifications do not
    // queue for a pooled connection behind the requests (writers waiting on an account's row hold
    // them all under load).
    const client = this.client;
    if (client) await client.query('select pg_notify($1, payload) from unnest($2::text[]) as payload', [channel, [...payloads]]);
    else await sql`select pg_notify(${channel}, payload) from unnest(${[...payloads]}::text[]) as payload`.execute(exec);
  }

  async listen(channel: string, onMessage: (payload: string) => void, onReconnect: () => void, onLost?: () => void): Promise<void> {
    this.channels.set(channel, { onMessage, onReconnect, onLost });
    if (!this.client) await this.connect();
    else await this.client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
  }

  private async connect(): Promise<void> {
    // Named, so an operator (and the multi-process test) can tell it from the pool's connections.
    const client = new pg.Client({ connectionString: this.connectionString, application_name: NOTIFICATIONS_APPLICATION_NAME });
    client.on('notification', (message) => this.channels.get(message.channel)?.onMessage(message.payload ?? ''));
    const lost = () => {
      if (this.client === client) this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', lost);
    await client.connect();
    for (const channel of this.channels.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    this.client = client;
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    this.client = undefined;
    for (const { onLost } of this.channels.values()) onLost?.();
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.connect().then(
        () => {
          for (const { onReconnect } of this.channels.values()) onReconnect();
        },
        () => this.scheduleReconnect(),
      );
    }, RECONNECT_DELAY_MS);
    this.reconnectTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
