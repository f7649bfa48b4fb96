// Requests sent with an Idempotency-Key (api-decisions §11): their outcomes, kept 24 hours under
// the key and its scope (the account, or the caller's address before there is one), and the keys
// this process is running now. An outcome that holds a secret is stored sealed under the secrets
// key, its headers with its body, and never in plain text.
import type { Kysely } from 'kysely';
import type { Database, Executor } from '../storage/schema.js';
import type { Clock } from '../platform/clock.js';
import type { SecretBox } from '../platform/secret-box.js';
import { amongWrites, type OutcomeRecorder } from '../storage/transaction.js';
import type { JoinedRows } from '../storage/postgres-writes.js';
import {
  deleteOutcome,
  deleteOutcomesBefore,
  findOutcomes,
  insertOutcomes,
  insertOutcomesJoined,
  sealedOutcomes,
  updateSealedBody,
  type IdempotentRequestRow,
} from './store.js';

/** How long an outcome answers a retry. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** Far longer than any request runs (a batch of 1,000 takes well under a second): a key held longer is one a request failed to let go of. */
const RUNNING_AT_MOST_MS = 5 * 60 * 1000;
/** The most keys one lookup asks for. */
const LOOKUP_BATCH = 100;
/** Outcomes deleted by one statement of the sweep, with a turn of the event loop between statements. */
const SWEEP_BATCH = 500;

/** A response as a replay repeats it. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface StoredOutcome {
  fingerprint: string;
  response: StoredResponse;
}

export class IdempotentRequests implements OutcomeRecorder {
  /** The keys whose first request runs in this process: that request's fingerprint, and since when. */
  private readonly running = new Map<string, { fingerprint: string; since: number }>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly box: SecretBox,
  ) {}

  /** Marks the key as running here; the fingerprint of the request already running it, if one is. */
  begin(scope: string, key: string, fingerprint: string): string | undefined {
    const id = `${scope}\u0000${key}`;
    const now = this.clock.now().getTime();
    const running = this.running.get(id);
    // A mark older than any request may run is one a request failed to let go of: it holds nothing.
    if (running !== undefined && now - running.since < RUNNING_AT_MOST_MS) return running.fingerprint;
    this.running.set(id, { fingerprint, since: now });
    return undefined;
  }

  end(scope: string, key: string): void {
    this.running.delete(`${scope}\u0000${key}`);
  }

  /** Lookups waiting for the next turn of the event loop, to be asked together. */
  private lookups: Array<{ scope: string; key: string; settle: (row: Promise<IdempotentRequestRow | undefined>) => void }> = [];

  /**
   * The outcome stored under the key, unless it is older than the time it is kept (then it is
   * gone). The keys of the requests that arrive in one turn of the event loop are looked up by one
   * query: on PostgreSQL a query each was most of what a key cost (bench/HISTORY.md, "Idempotent
   * requests and batches").
   */
  async find(scope: string, key: string): Promise<StoredOutcome | undefined> {
    const row = await new Promise<IdempotentRequestRow | undefined>((resolve) => {
      this.lookups.push({ scope, key, settle: resolve });
      if (this.lookups.length === 1) setImmediate(() => this.lookUp());
    });
    if (!row) return undefined;
    if (row.created_at < this.oldestKept()) {
      await deleteOutcome(this.db, scope, key);
      return undefined;
    }
    const stored = row.sealed ? (JSON.parse(this.box.open(row.body)) as Omit<StoredResponse, 'status'>) : { headers: JSON.parse(row.headers), body: row.body };
    return { fingerprint: row.fingerprint, response: { status: row.status, ...stored } };
  }

  private lookUp(): void {
    const waiting = this.lookups;
    this.lookups = [];
    for (let start = 0; start < waiting.length; start += LOOKUP_BATCH) {
      const part = waiting.slice(start, start + LOOKUP_BATCH);
      const rows = amongWrites(this.db, (exec) => findOutcomes(exec, part)).then((found) => new Map(found.map((row) => [`${row.scope}\u0000${row.key}`, row])));
      for (const { scope, key, settle } of part) settle(rows.then((byKey) => byKey.get(`${scope}\u0000${key}`)));
    }
  }

  /** Stores the outcome on its own (not with an effect); false when one was stored under the key first. */
  async store(scope: string, key: string, fingerprint: string, response: StoredResponse, sealed: boolean): Promise<boolean> {
    const row = this.rowOf(scope, key, fingerprint, response, sealed);
    return amongWrites(this.db, (exec) => this.insert(exec, [row]));
  }

  /** The row that stores an outcome: its response sealed when it holds a secret. */
  rowOf(scope: string, key: string, fingerprint: string, response: StoredResponse, sealed: boolean): IdempotentRequestRow {
    const { status, headers, body } = response;
    return {
      scope,
      key,
      fingerprint,
      status,
      headers: sealed ? '{}' : JSON.stringify(headers),
      body: sealed ? this.box.seal(JSON.stringify({ headers, body })) : body,
      sealed: sealed ? 1 : 0,
      created_at: this.clock.now().toISOString(),
    };
  }

  /** Inserts outcome rows (made by `rowOf`) through `exec`, the transaction of their effects; false when one was stored under its key first. */
  async insert(exec: Executor, rows: readonly object[]): Promise<boolean> {
    return (await insertOutcomes(exec, rows as IdempotentRequestRow[])) === rows.length;
  }

  joined(rows: readonly object[]): JoinedRows {
    return insertOutcomesJoined(rows as IdempotentRequestRow[]);
  }

  /** Deletes the outcomes past their time, a batch per statement, stopping between statements once `signal` aborts; how many. */
  async sweep(signal?: AbortSignal): Promise<number> {
    let deleted = 0;
    for (;;) {
      if (signal?.aborted) return deleted;
      const count = await deleteOutcomesBefore(this.db, this.oldestKept(), SWEEP_BATCH);
      deleted += count;
      if (count < SWEEP_BATCH) return deleted;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private oldestKept(): string {
    return new Date(this.clock.now().getTime() - IDEMPOTENCY_TTL_MS).toISOString();
  }
}

/** Seals the sealed outcomes again under another key (a change of the secrets key); how many. */
export async function resealOutcomes(db: Executor, from: SecretBox, to: SecretBox): Promise<number> {
  let after: { scope: string; key: string } | undefined;
  let count = 0;
  for (;;) {
    const page = await sealedOutcomes(db, after, SWEEP_BATCH);
    for (const row of page) await updateSealedBody(db, row.scope, row.key, to.seal(from.open(row.body)));
    count += page.length;
    if (page.length < SWEEP_BATCH) return count;
    after = page.at(-1);
  }
}
