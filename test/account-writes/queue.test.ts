// The per-account queue of write transactions on PostgreSQL (src/account-writes/queue.ts).
import { describe, expect, it } from 'vitest';
import { AccountQueue } from '../../src/account-writes/queue.js';

/** Work that records its start and end, and finishes when released (or fails, if told to). */
function gated(log: string[], name: string, fail = false) {
  let release = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const work = async () => {
    log.push(`start ${name}`);
    await gate;
    log.push(`end ${name}`);
    if (fail) throw new Error(`${name} failed`);
    return name;
  };
  return { work, release };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('AccountQueue', () => {
  it("runs one account's work one after another in the order given, and other accounts' at once", async () => {
    const queue = new AccountQueue();
    const log: string[] = [];
    const a1 = gated(log, 'a1');
    const a2 = gated(log, 'a2', true);
    const a3 = gated(log, 'a3');
    const b1 = gated(log, 'b1');
    const results = [queue.run('acc_a', a1.work), queue.run('acc_a', a2.work), queue.run('acc_a', a3.work), queue.run('acc_b', b1.work)];
    await turn();
    expect(log).toEqual(['start a1', 'start b1']);
    expect(queue.size).toBe(2);
    // Released out of order: a3 still waits for a2, which waits for a1.
    a3.release();
    a2.release();
    await turn();
    expect(log).toEqual(['start a1', 'start b1']);
    a1.release();
    b1.release();
    const settled = await Promise.allSettled(results);
    // A failure is its caller's alone: the next work still runs.
    expect(settled.map((each) => (each.status === 'fulfilled' ? each.value : (each.reason as Error).message))).toEqual(['a1', 'a2 failed', 'a3', 'b1']);
    expect(log.filter((line) => / a\d/.test(line))).toEqual(['start a1', 'end a1', 'start a2', 'end a2', 'start a3', 'end a3']);
    await turn();
    expect(queue.size).toBe(0);
  });

  it('starts work at once when nothing of the account is queued', async () => {
    const queue = new AccountQueue();
    const log: string[] = [];
    const only = gated(log, 'only');
    const result = queue.run('acc_a', only.work);
    expect(log).toEqual(['start only']);
    only.release();
    expect(await result).toBe('only');
  });
});
