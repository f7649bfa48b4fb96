// The account-write pipeline's rule for reactions inside a write (src/account-writes/pipeline.ts):
// one declared with no condition to skip it runs for every write, so no write of the account may
// then take one statement; one whose condition holds is not run, and (PostgreSQL) the account's
// writes take one statement again. Driven through the HTTP server: updates, custom events and
// creations sent at once, as a busy device sends them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ON_POSTGRES, TestApp, type TestAccount } from '../support/app.js';
import type { Written } from '../../src/account-writes/pipeline.js';
import type { AccountCondition } from '../../src/storage/sequences.js';

describe('reactions inside an account write', () => {
  let app: TestApp;
  let account: TestAccount;
  let resourceId: string;
  const committed: Written[] = [];

  beforeAll(async () => {
    app = await TestApp.start();
    account = await app.account();
    const created = await app.request({ method: 'POST', url: '/api/v1/resources', key: account.key, body: { name: 'Lamp', type: 'switch', state: false } });
    expect(created.status, created.body).toBe(201);
    resourceId = created.json.id;
    app.context.writes.afterCommit((written) => committed.push(written));
  });

  afterAll(async () => {
    await app?.close();
  });

  /** Twenty updates and twenty custom events at once; the event ids they answered. */
  async function burst(): Promise<number[]> {
    const sent = [];
    for (let index = 0; index < 20; index++) {
      sent.push(app.request({ method: 'PATCH', url: `/api/v1/resources/${resourceId}`, key: account.key, body: { state: index % 2 === 0 } }));
      sent.push(app.request({ method: 'POST', url: '/api/v1/events', key: account.key, body: { type: 'custom.tick', data: { index } } }));
    }
    const answered = await Promise.all(sent);
    for (const response of answered) expect(response.status, response.body).toBeLessThan(300);
    return answered.filter((response) => response.json.type === 'custom.tick').map((response) => response.json.id as number);
  }

  /** The account's commits, and what a reaction registered with `skippableWhen` saw, while `action` runs. */
  async function withReaction(skippableWhen: AccountCondition | null, action: () => Promise<void>): Promise<{ mine: Written[]; seen: Written[] }> {
    const seen: Written[] = [];
    const remove = app.context.writes.inside({ name: 'test: records what it sees', skippableWhen, react: async (_exec, written) => void seen.push(written) });
    const from = committed.length;
    try {
      await action();
    } finally {
      remove();
    }
    return { mine: committed.slice(from).filter((written) => written.accountId === account.accountId), seen };
  }

  const eventIds = (writes: Written[]) => writes.flatMap((written) => written.events.map((event) => event.id));
  const paths = (writes: Written[]) => [...new Set(writes.map((written) => written.path))];

  it('runs a reaction that declares no condition for every write, each of which takes a transaction', async () => {
    let customIds: number[] = [];
    const { mine, seen } = await withReaction(null, async () => {
      customIds = await burst();
    });
    expect(paths(mine)).toEqual(['transaction']);
    // The reaction saw each committed event once, in the same transactions.
    expect(eventIds(seen)).toEqual(eventIds(mine));
    expect(eventIds(seen).length).toBe(40);
    for (const id of customIds) expect(eventIds(seen)).toContain(id);
  });

  it('does not run a reaction while its condition holds, and then lets one statement write', async () => {
    // The account has no webhooks: the condition holds.
    const { mine, seen } = await withReaction({ webhook_count: 0 }, async () => void (await burst()));
    expect(seen).toEqual([]);
    expect(eventIds(mine).length).toBe(40);
    // Several processes batch an account's writes that wait together; one process commits them together already.
    if (ON_POSTGRES) expect(paths(mine)).toContain('one_statement');
    else expect(paths(mine)).toEqual(['transaction']);
  });

  it('runs a reaction whose condition does not hold, inside the transaction, with the webhook outbox', async () => {
    const hook = await app.request({
      method: 'POST',
      url: '/api/v1/webhooks',
      key: account.key,
      body: { name: 'Never called', url: 'https://93.184.215.14/never', events: ['custom.never'] },
    });
    expect(hook.status, hook.body).toBe(201);
    const { mine, seen } = await withReaction({ webhook_count: 0 }, async () => void (await burst()));
    expect(paths(mine)).toEqual(['transaction']);
    expect(eventIds(seen)).toEqual(eventIds(mine));
    expect(eventIds(seen).length).toBe(40);
  });
});
