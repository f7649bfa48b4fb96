// Two processes on one database (two apps, as several `devdata serve` processes would be) receiving
// the same Idempotency-Key at once: one runs, the other answers 409 or the first's answer, and the
// work is done once: their account writes meet at the account's row and the unique key of the
// stored answers. PostgreSQL only: SQLite serves one process (two apps in this one would block each
// other in SQLite's busy wait, which holds the thread both run on).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../support/wait.js';
import { ON_POSTGRES, sharedDatabase, TestApp, type TestAccount, type TestResponse } from '../support/app.js';

describe.skipIf(!ON_POSTGRES)('one key sent to two processes at once', () => {
  let database: { url: string; drop: () => Promise<void> };
  let apps: TestApp[];
  let caller: TestAccount;

  beforeAll(async () => {
    database = await sharedDatabase();
    apps = [await TestApp.start({ env: { DATABASE_URL: database.url } }), await TestApp.start({ env: { DATABASE_URL: database.url } })];
    caller = await apps[0]!.account();
  });

  afterAll(async () => {
    for (const app of apps ?? []) await app.close();
    await database?.drop();
  });

  const newest = async () =>
    ((await apps[1]!.request({ method: 'GET', url: '/api/v1/events?type=custom.none&limit=1', key: caller.key })).json as { cursor: number }).cursor;

  it('writes once; the other answer is 409 or the same bytes replayed', async () => {
    const { id } = (await apps[0]!.request({ method: 'POST', url: '/api/v1/resources', key: caller.key, body: { name: 'n', type: 'sensor', state: 0 } }))
      .json as {
      id: string;
    };
    const requests = [
      (key: string) => ({ method: 'POST', url: '/api/v1/events', body: { type: 'custom.race', data: { key } } }),
      (key: string) => ({ method: 'PATCH', url: `/api/v1/resources/${id}`, body: { state: key.length } }),
      (key: string) => ({
        method: 'POST',
        url: '/api/v1/batch',
        body: {
          operations: [
            { op: 'publish', type: 'custom.race', data: { key } },
            { op: 'update', id, state: 1 },
          ],
        },
      }),
    ];
    let replays = 0;
    for (let round = 0; round < 30; round++) {
      const key = `race-${round}-${Math.random().toString(36).slice(2)}`;
      const request = requests[round % requests.length]!(key);
      const before = await newest();
      const answers: TestResponse[] = await Promise.all(apps.map((app) => app.request({ ...request, key: caller.key, headers: { 'idempotency-key': key } })));
      const fresh = answers.filter((answer) => answer.headers['idempotent-replayed'] === undefined && answer.status < 300);
      expect(fresh, JSON.stringify(answers.map((answer) => [answer.status, answer.body]))).toHaveLength(1);
      for (const other of answers.filter((answer) => answer !== fresh[0])) {
        if (other.status === 409) {
          expect((other.json as { error: { code: string } }).error.code).toBe('idempotency_key_in_use');
        } else {
          expect(other.headers['idempotent-replayed'], `${other.status} ${other.body}`).toBe('true');
          expect(other.body).toBe(fresh[0]!.body);
          replays++;
        }
      }
      // The other process learns of the write by a notification: the count is waited for, and must then hold.
      const expected = before + (round % requests.length === 2 ? 2 : 1);
      await until(async () => (await newest()) >= expected, `event ${expected}`);
      expect(await newest()).toBe(expected);
    }
    // Across processes the key's running mark is not seen: the later request's record meets the first's.
    expect(replays).toBeGreaterThan(0);
  });

  it('writes each of many requests waiting together once: keyed ones sent to both, and others beside them', async () => {
    const ids: string[] = [];
    for (let index = 0; index < 4; index++) {
      const created = await apps[0]!.request({
        method: 'POST',
        url: '/api/v1/resources',
        key: caller.key,
        body: { name: `m${index}`, type: 'sensor', state: 0 },
      });
      ids.push((created.json as { id: string }).id);
    }
    // Read first, so each process holds the account's resources and decides updates against them
    // (one statement for the updates waiting together, their outcomes part of it).
    for (const app of apps) await app.request({ url: '/api/v1/resources', key: caller.key });
    await until(async () => apps.every((app) => app.context.services.resourceReads.views.held(caller.accountId) !== undefined), 'resources held');
    const before = await newest();
    const keys = Array.from({ length: 24 }, (_, index) => `many-${index}-${Math.random().toString(36).slice(2)}`);
    const keyed = keys.flatMap((key, index) => {
      const request =
        index % 2 === 0
          ? { method: 'POST', url: '/api/v1/events', body: { type: 'custom.many', data: { key } } }
          : { method: 'PATCH', url: `/api/v1/resources/${ids[index % ids.length]}`, body: { state: index } };
      return apps.map((app) => app.request({ ...request, key: caller.key, headers: { 'idempotency-key': key } }));
    });
    const plain = Array.from({ length: 24 }, (_, index) =>
      apps[index % 2]!.request(
        index % 2 === 0
          ? { method: 'POST', url: '/api/v1/events', key: caller.key, body: { type: 'custom.plain', data: { index } } }
          : { method: 'PATCH', url: `/api/v1/resources/${ids[index % ids.length]}`, key: caller.key, body: { state: 100 + index } },
      ),
    );
    const answers = await Promise.all(keyed);
    for (const answer of await Promise.all(plain)) expect(answer.status, answer.body).toBeLessThan(300);
    for (let index = 0; index < keys.length; index++) {
      const pair = answers.slice(index * 2, index * 2 + 2);
      const fresh = pair.filter((answer) => answer.status < 300 && answer.headers['idempotent-replayed'] === undefined);
      expect(fresh, JSON.stringify(pair.map((answer) => [answer.status, answer.body]))).toHaveLength(1);
      const other = pair.find((answer) => answer !== fresh[0])!;
      if (other.status !== 409) expect(other.body).toBe(fresh[0]!.body);
    }
    // One event per key and one per plain request: nothing twice, nothing lost.
    const expected = before + keys.length + plain.length;
    await until(async () => (await newest()) >= expected, `event ${expected}`);
    expect(await newest()).toBe(expected);
  });

  it('writes keyed updates waiting together by one statement that stores their answers, and replays them', async () => {
    const [app] = apps as [TestApp];
    const { id } = (await app.request({ method: 'POST', url: '/api/v1/resources', key: caller.key, body: { name: 'one', type: 'sensor', state: 0 } })).json as {
      id: string;
    };
    await app.request({ url: '/api/v1/resources', key: caller.key });
    await until(async () => app.context.services.resourceReads.views.held(caller.accountId) !== undefined, 'resources held');
    const paths: string[] = [];
    const stop = app.context.writes.afterCommit((written) => {
      if (written.events[0]?.type === 'resource.updated') paths.push(written.path);
    });
    const keys = Array.from({ length: 30 }, (_, index) => `joined-${index}-${Math.random().toString(36).slice(2)}`);
    const send = () =>
      Promise.all(
        keys.map((key, index) =>
          app.request({ method: 'PATCH', url: `/api/v1/resources/${id}`, key: caller.key, body: { state: index }, headers: { 'idempotency-key': key } }),
        ),
      );
    try {
      const first = await send();
      for (const answer of first) expect(answer.status, answer.body).toBe(200);
      expect(paths).toContain('one_statement');
      const again = await send();
      for (const [index, answer] of again.entries()) {
        expect(answer.headers['idempotent-replayed']).toBe('true');
        expect(answer.body).toBe(first[index]!.body);
      }
      // The versions went up once per key: the replays wrote nothing.
      const versions = first.map((answer) => (answer.json as { version: number }).version).sort((a, b) => a - b);
      expect(versions).toEqual(Array.from({ length: keys.length }, (_, index) => index + 2));
    } finally {
      stop();
    }
  });
});
