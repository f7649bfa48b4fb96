// Several processes (PostgreSQL): the write transactions of one account wait their turn in this
// process, so that at most one per process waits on the account's row lock. With all of them at
// the lock, every commit woke every waiter to re-check the updated row, and each held a pooled
// connection while it waited (bench/HISTORY.md, "PostgreSQL: reads from memory in every process, and the writes").

/** Runs the work given for one account one after another, in the order given; accounts apart run at once. */
export class AccountQueue {
  /** Per account with work queued: the settling of its last work. Emptied as each account's queue drains. */
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(accountId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(accountId);
    const result = previous ? previous.then(work) : work();
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(accountId, tail);
    void tail.then(() => {
      if (this.tails.get(accountId) === tail) this.tails.delete(accountId);
    });
    return result;
  }

  /** Accounts with work queued or running. */
  get size(): number {
    return this.tails.size;
  }
}

/** An item waiting in a batch, and who waits for its result. */
export interface Waiting<Item, Result> {
  readonly item: Item;
  resolve(result: Result): void;
  reject(error: unknown): void;
}

/**
 * Several processes: an account's writes of one kind that wait together for the account's turn
 * in the queue, and take it together: `write` settles each of them (one statement instead of a
 * transaction each). A batch holds at most `limits.items` items and `limits.bytes` bytes.
 */
export class AccountBatches<Item, Result> {
  /** Per account: the batch still waiting for its turn, which new items join. */
  private readonly open = new Map<string, { waiting: Waiting<Item, Result>[]; bytes: number }>();

  constructor(
    private readonly queue: AccountQueue,
    private readonly write: (accountId: string, waiting: readonly Waiting<Item, Result>[]) => Promise<void>,
    private readonly limits: { items: number; bytes: number },
  ) {}

  add(accountId: string, item: Item, bytes = 0): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      const open = this.open.get(accountId);
      const batch = open && open.waiting.length < this.limits.items && open.bytes < this.limits.bytes ? open : { waiting: [], bytes: 0 };
      batch.waiting.push({ item, resolve, reject });
      batch.bytes += bytes;
      if (batch !== open) {
        this.open.set(accountId, batch);
        // With nothing of the account under way its turn comes at once, holding only this item.
        void this.queue.run(accountId, () => this.turn(accountId, batch.waiting));
      }
    });
  }

  private async turn(accountId: string, waiting: readonly Waiting<Item, Result>[]): Promise<void> {
    // Its turn has come: later items go in the next batch.
    if (this.open.get(accountId)?.waiting === waiting) this.open.delete(accountId);
    try {
      await this.write(accountId, waiting);
    } catch (error) {
      // Those `write` settled already keep their result.
      for (const entry of waiting) entry.reject(error);
    }
  }
}
