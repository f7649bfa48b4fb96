// The account-write pipeline: every write of an account's events, and of the rows they announce,
// goes through it, on both backends. Areas hand it what to write; it owns the steps
// (docs/architecture.md, "The write pipeline"):
//   1. turn:      several processes: an account's writes wait their turn in this process (queue.ts),
//                 and the waiting items of one kind take it together;
//   2. decide:    the kind decides its items, against memory for one statement, else under the lock;
//   3. lock:      the account's row: its next event ids, and the counters the reactions look at;
//   4. write:     the rows and the events;
//   5. inside:    the reactions that commit with the write (the webhook outbox, the history's
//                 points), each skipped while the condition it declared holds;
//   6. commit:    PostgreSQL's, or SQLite's group commit;
//   7. committed: the reactions after the commit, before the writer hears of it (the recent events,
//                 counts, streams, read models, metrics, the webhook dispatcher).
// One statement (PostgreSQL) does steps 3 to 6 when every inside reaction declared when it may be
// skipped, or writes its rows as a part of that statement: the statement writes only while all of
// those conditions hold, else nothing.
import type { Kysely, Transaction } from 'kysely';
import type { Database, Executor } from '../storage/schema.js';
import type { Clock } from '../platform/clock.js';
import { afterCommit, inTransaction, joinedOutcomes, OutcomeTaken, recordOutcomes, type OutcomeRecord } from '../storage/transaction.js';
import { isUniqueViolation } from '../storage/errors.js';
import { conditionHolds, nextEventSequence, takeEventIds, type AccountCondition } from '../storage/sequences.js';
import type { JoinedRows } from '../storage/postgres-writes.js';
import type { Event } from '../areas/events/event.js';
import { insertEvent, insertEventsInOneStatement } from './store.js';
import { AccountBatches, type AccountQueue, type Waiting } from './queue.js';

/** What a write committed: the account's new events, in id order, and the way it took. */
export interface Written {
  readonly accountId: string;
  readonly events: readonly Event[];
  readonly path: WritePath;
}

/** One statement (steps 3 to 6 at once, PostgreSQL), or a transaction. */
export type WritePath = 'one_statement' | 'transaction';

/** A reaction that commits, or rolls back, with the write. */
export interface InsideReaction {
  /** What it does, for the reader of the wiring. */
  readonly name: string;
  /**
   * The account's counters with which it has nothing to do: then it is not run, and one statement
   * may write without it. Null when it always has work: no write of the account is then made by
   * one statement. Required, so that a new reaction cannot be skipped by accident.
   */
  readonly skippableWhen: AccountCondition | null;
  react(exec: Executor, written: Written): Promise<void>;
  /**
   * PostgreSQL: what it writes as a part of the one statement instead (rows of a reaction that
   * needs no id of the events), so that it does not keep writes from taking one; undefined when it
   * has nothing to write for them. A reaction without it keeps every write from one statement
   * unless its condition holds.
   */
  joined?(written: Written): JoinedRows | undefined;
}

/** A reaction once the write committed; must not throw (the write is done). */
export interface CommittedReaction<Mark = unknown> {
  /** Holding the account's lock, before the write: what `committed` is handed. */
  locked?(): Mark;
  committed(written: Written, mark: Mark): void;
}

/** An account's write transaction, its lock held: what a write appends its events with. */
export interface AccountWrite {
  readonly trx: Transaction<Database>;
  readonly accountId: string;
  /** The account's newest event id as this transaction sees it: the committed ones, then its own. */
  readonly lastEventId: number;
  append(type: string, data: Record<string, unknown>): Promise<Event>;
  /** Several events in order, their ids taken at once (on PostgreSQL in one statement); sets each one's id and time. */
  appendAll(events: Event[]): Promise<void>;
  /** PostgreSQL only: the events, with the rows that go with them, in one statement. */
  appendWith?(events: Event[], rows?: JoinedRows | readonly JoinedRows[]): Promise<void>;
}

/** What came of one item: its result, or the error that refused it (and wrote nothing of it). */
export type Outcome<Result> = { value: Result } | { error: unknown };

/** A kind's items decided against memory, for one statement. */
export interface OneStatement<Result> {
  /** What the first `outcomes.length` items answer once the statement wrote. */
  outcomes: Outcome<Result>[];
  /** Their events, in order; their ids and time are set as they are written. */
  events: Event[];
  rows?: JoinedRows;
  /** Written only while the account's newest event is still the one the decision saw. */
  ifNewestIs?: number;
}

/** A kind of write whose items of one account may take the account's turn together. */
export interface WriteKind<Item, Result> {
  /** The most items, and bytes of them, in one turn. */
  readonly limits: { items: number; bytes: number };
  /** Several processes: the items decided for one statement, or undefined to take a transaction. */
  alone?(accountId: string, items: readonly Item[]): OneStatement<Result> | undefined;
  /** The items in the account's transaction, in order: what each answers. A refused one writes nothing. */
  inTransaction(write: AccountWrite, items: readonly Item[]): Promise<Outcome<Result>[]>;
}

/** Writes an item of a kind, recording `outcome` with it; settles with its result. */
export type Submit<Item, Result> = (accountId: string, item: Item, bytes?: number, outcome?: OutcomeRecord) => Promise<Result>;

/** An item as it waits: with the outcome its request records in the same transaction. */
interface Entry<Item> {
  item: Item;
  outcome: OutcomeRecord | undefined;
}

/** Thrown to roll back a transaction whose items were all refused: it has nothing to commit. */
class NothingToCommit extends Error {}

export class AccountWrites {
  private readonly insideReactions: InsideReaction[] = [];
  private readonly committedReactions: Array<CommittedReaction<unknown>> = [];

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    /** Several processes: an account's writers queue here instead of at its row lock. */
    private readonly queue?: AccountQueue,
  ) {}

  inside(reaction: InsideReaction): () => void {
    return register(this.insideReactions, reaction);
  }

  afterCommit<Mark>(reaction: CommittedReaction<Mark> | ((written: Written) => void)): () => void {
    const committed = typeof reaction === 'function' ? { committed: reaction } : reaction;
    return register(this.committedReactions, committed as CommittedReaction<unknown>);
  }

  /**
   * Runs `work` in the account's write transaction, its turn come; it appends at least one event.
   * `outcome` is recorded in the same transaction, given what `work` returned.
   */
  async transaction<T>(accountId: string, work: (write: AccountWrite) => Promise<T>, outcome?: OutcomeRecord): Promise<T> {
    return this.queue ? this.queue.run(accountId, () => this.inTurn(accountId, work, outcome)) : this.inTurn(accountId, work, outcome);
  }

  /**
   * A write of the account that announces no event (a backfill of history): in the account's turn,
   * in a transaction that records `outcome`; it takes no event id and no reaction runs.
   */
  async withoutEvents<T>(accountId: string, work: (trx: Transaction<Database>) => Promise<T>, outcome?: OutcomeRecord): Promise<T> {
    const run = () => inTransaction(this.db, work, outcome);
    return this.queue ? this.queue.run(accountId, run) : run();
  }

  /** The way items of `kind` are written: together with others waiting for the account (several processes), else each in a transaction. */
  kind<Item, Result>(kind: WriteKind<Item, Result>): Submit<Item, Result> {
    const { queue } = this;
    if (!queue) return async (accountId, item, _bytes, outcome) => outcomeOf((await this.inTransaction(kind, accountId, [{ item, outcome }]))[0]!);
    const batches = new AccountBatches<Entry<Item>, Result>(queue, (accountId, waiting) => this.turn(kind, accountId, waiting), kind.limits);
    return (accountId, item, bytes = 0, outcome) => batches.add(accountId, { item, outcome }, bytes);
  }

  /**
   * Several processes, the account's turn come: one statement for what it can take, a transaction
   * for the rest. When requests among them record their outcomes, the statement runs in a
   * transaction that records them all with one more statement.
   */
  private async turn<Item, Result>(kind: WriteKind<Item, Result>, accountId: string, waiting: readonly Waiting<Entry<Item>, Result>[]): Promise<void> {
    let settled = 0;
    const condition = this.skipCondition();
    const entries = waiting.map((entry) => entry.item);
    const items = entries.map((entry) => entry.item);
    const statement = condition && kind.alone?.(accountId, items);
    if (statement && statement.events.length > 0 && (await this.writeInOneStatement(accountId, statement, condition, entries))) {
      settle(waiting, statement.outcomes);
      settled = statement.outcomes.length;
    }
    if (settled < waiting.length) settle(waiting.slice(settled), await this.inTransaction(kind, accountId, entries.slice(settled)));
  }

  /** The condition under which every inside reaction may be skipped; undefined when one never may. */
  private skipCondition(): AccountCondition | undefined {
    let condition: AccountCondition = {};
    for (const reaction of this.insideReactions) {
      if (reaction.joined) continue;
      if (reaction.skippableWhen === null) return undefined;
      condition = { ...condition, ...reaction.skippableWhen };
    }
    return condition;
  }

  /**
   * Steps 3 to 7 in one statement, with the outcomes its items' requests record; false when a
   * condition failed, or another process recorded one of the outcomes first, and nothing was
   * written. An outcome is made from its item's result, which may hold its event's id: known
   * before the statement when the statement writes only after the event the kind decided against,
   * else the statement runs in a transaction that records the outcomes after it.
   */
  private async writeInOneStatement(
    accountId: string,
    statement: OneStatement<unknown>,
    condition: AccountCondition,
    entries: readonly Entry<unknown>[],
  ): Promise<boolean> {
    const { events, ifNewestIs } = statement;
    const createdAt = this.clock.now().toISOString();
    for (const event of events) event.createdAt = createdAt;
    // Taken before the statement, as a transaction takes them holding the lock.
    const marks = this.marks();
    const written: Written = { accountId, events, path: 'one_statement' };
    const reactionRows = this.insideReactions.flatMap((reaction) => reaction.joined?.(written) ?? []);
    const kindRows = [...(statement.rows ? [statement.rows] : []), ...reactionRows];
    const options = { take: events.length, condition, ifNewestIs, rows: kindRows };
    const recorded = statement.outcomes.flatMap((outcome, index) => {
      const record = entries[index]!.outcome;
      return record && 'value' in outcome ? [{ outcome: record, value: outcome.value }] : [];
    });
    try {
      if (recorded.length === 0 || ifNewestIs !== undefined) {
        if (ifNewestIs !== undefined) {
          for (const [index, event] of events.entries()) event.id = ifNewestIs + 1 + index;
        }
        const outcomes = recorded.length > 0 ? joinedOutcomes(recorded) : undefined;
        const rows = [...kindRows, ...(outcomes?.rows ?? [])];
        if (!(await insertEventsInOneStatement(this.db, accountId, events, { ...options, rows }))) return false;
        outcomes?.written();
        this.committed(written, marks);
        return true;
      }
      return await inTransaction(this.db, async (trx) => {
        if (!(await insertEventsInOneStatement(trx, accountId, events, options))) return false;
        await recordOutcomes(trx, recorded);
        afterCommit(trx, () => this.committed(written, marks));
        return true;
      });
    } catch (error) {
      // Each item is then written in the transaction path, which finds whose outcome was taken.
      if (error instanceof OutcomeTaken || (recorded.length > 0 && isUniqueViolation(error))) return false;
      throw error;
    }
  }

  /**
   * The items in one transaction, each written item's outcome recorded with it; when all are
   * refused, it rolls back and they answer their errors. An item whose outcome another process
   * recorded first (the same Idempotency-Key) answers OutcomeTaken, and the others are written again
   * without it: the rollback undid its effect with theirs.
   */
  private async inTransaction<Item, Result>(kind: WriteKind<Item, Result>, accountId: string, entries: readonly Entry<Item>[]): Promise<Outcome<Result>[]> {
    let outcomes: Outcome<Result>[] = [];
    const taken = new Map<number, OutcomeTaken>();
    for (;;) {
      const remaining = entries.flatMap((entry, index) => (taken.has(index) ? [] : [{ entry, index }]));
      try {
        if (remaining.length > 0) {
          await this.inTurn(accountId, async (write) => {
            outcomes = await kind.inTransaction(
              write,
              remaining.map(({ entry }) => entry.item),
            );
            for (const [position, outcome] of outcomes.entries()) {
              const { entry, index } = remaining[position]!;
              if (!('value' in outcome) || !entry.outcome) continue;
              try {
                await recordOutcomes(write.trx, [{ outcome: entry.outcome, value: outcome.value }]);
              } catch (error) {
                if (error instanceof OutcomeTaken) taken.set(index, error);
                throw error;
              }
            }
            if (!outcomes.some((outcome) => 'value' in outcome)) throw new NothingToCommit();
          });
        }
      } catch (error) {
        if (error instanceof OutcomeTaken) continue;
        if (!(error instanceof NothingToCommit)) throw error;
      }
      const answered = new Map(remaining.map(({ index }, position) => [index, outcomes[position]!]));
      return entries.map((_entry, index) => answered.get(index) ?? { error: taken.get(index)! });
    }
  }

  /** Steps 3 to 7 in a transaction, the account's turn come; `outcome` recorded in it. */
  private async inTurn<T>(accountId: string, work: (write: AccountWrite) => Promise<T>, outcome?: OutcomeRecord): Promise<T> {
    const appended: Event[] = [];
    return inTransaction(
      this.db,
      async (trx) => {
        const first = await nextEventSequence(trx, accountId);
        const marks = this.marks();
        let nextId = first.id;
        const write: { -readonly [K in keyof AccountWrite]: AccountWrite[K] } = {
          trx,
          accountId,
          lastEventId: nextId - 1,
          append: async (type, data) => {
            // The first id was reserved when the transaction started; further ones are taken now.
            if (appended.length > 0) nextId = (await nextEventSequence(trx, accountId)).id;
            const event: Event = { id: nextId, type, data, createdAt: this.clock.now().toISOString() };
            await insertEvent(trx, accountId, event);
            appended.push(event);
            write.lastEventId = nextId;
            return event;
          },
          appendAll: async (events) => {
            if (events.length === 0) return;
            const createdAt = this.clock.now().toISOString();
            for (const event of events) event.createdAt = createdAt;
            // The first id was reserved when the transaction started, if nothing took it yet.
            const take = events.length - (appended.length === 0 ? 1 : 0);
            if (this.queue) await insertEventsInOneStatement(trx, accountId, events, { take });
            else {
              let id = (take > 0 ? await takeEventIds(trx, accountId, take) : first.id) - events.length + 1;
              for (const event of events) {
                event.id = id++;
                await insertEvent(trx, accountId, event);
              }
            }
            appended.push(...events);
            write.lastEventId = events.at(-1)!.id;
          },
          appendWith: !this.queue
            ? undefined
            : async (events, rows) => {
                if (events.length === 0) return;
                const createdAt = this.clock.now().toISOString();
                for (const event of events) event.createdAt = createdAt;
                // The first id was reserved when the transaction started, if nothing took it yet.
                await insertEventsInOneStatement(trx, accountId, events, { take: events.length - (appended.length === 0 ? 1 : 0), rows });
                appended.push(...events);
                write.lastEventId = events.at(-1)!.id;
              },
        };
        const value = await work(write);
        if (appended.length === 0) throw new Error('an account write committed no event');
        const written: Written = { accountId, events: appended, path: 'transaction' };
        for (const reaction of this.insideReactions) {
          if (reaction.skippableWhen === null || !conditionHolds(reaction.skippableWhen, first.counters)) await reaction.react(trx, written);
        }
        afterCommit(trx, () => this.committed(written, marks));
        return value;
      },
      outcome,
    );
  }

  private marks(): unknown[] {
    return this.committedReactions.map((reaction) => reaction.locked?.());
  }

  private committed(written: Written, marks: readonly unknown[]): void {
    this.committedReactions.forEach((reaction, index) => {
      reaction.committed(written, marks[index]);
    });
  }
}

function settle<Item, Result>(waiting: readonly Waiting<Item, Result>[], outcomes: readonly Outcome<Result>[]): void {
  for (const [index, outcome] of outcomes.entries()) {
    if ('value' in outcome) waiting[index]!.resolve(outcome.value);
    else waiting[index]!.reject(outcome.error);
  }
}

function outcomeOf<Result>(outcome: Outcome<Result>): Result {
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}

function register<T>(list: T[], item: T): () => void {
  list.push(item);
  return () => {
    const index = list.indexOf(item);
    if (index >= 0) list.splice(index, 1);
  };
}
