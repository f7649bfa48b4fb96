// Several processes (PostgreSQL): the write transactions of one account wait their turn in this
// process, so that at most one per process waits on the account's row lock. With all of them at
// the lock, every commit woke every waiter to re-check the updated row, and each held a pooled
// connection while it waited (bench/README.md, "PostgreSQL: reads from memory in every process, and the writes").

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
