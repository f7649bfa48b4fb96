// Many updates of one account sent at once (src/areas/resources/writes.ts, `updates`): on
// PostgreSQL those that wait together for the account's turn are decided against the process's copy
// and written by one statement; a precondition, a missing resource, a refused value and a tag change
// among them must come out as if each had taken a transaction of its own. Checked against the
// responses, the event log, and what a second app reads from storage.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../support/random.js';
import { ON_POSTGRES, TestApp, sharedDatabase, type TestAccount, type TestResponse } from '../support/app.js';
import type { Event } from '../../src/areas/events/event.js';

type Sent = { kind: 'state' | 'guarded' | 'missing' | 'refused' | 'tags' | 'attributes'; id: string; body: Record<string, unknown>; ifMatch?: string };

describe('updates of one account sent together', () => {
  let database: { url: string; drop: () => Promise<void> };
  let served: TestApp;
  let caller: TestAccount;
  /** How many events each of the app's one-statement writes held. */
  const statementSizes: number[] = [];

  beforeAll(async () => {
    // A file on SQLite, so that a second app reads the same storage.
    database = await sharedDatabase();
    served = await TestApp.start({ env: { DATABASE_URL: database.url } });
    caller = await served.account();
    served.context.writes.afterCommit(({ events, path }) => {
      if (path === 'one_statement') statementSizes.push(events.length);
    });
  });

  afterAll(async () => {
    await served?.close();
    await database?.drop();
  });

  const call = (method: string, url: string, body?: unknown, headers?: Record<string, string>): Promise<TestResponse> =>
    served.request({ method, url, key: caller.key, body, headers });

  async function create(body: Record<string, unknown>): Promise<string> {
    const created = await call('POST', '/api/v1/resources', body);
    expect(created.status, created.body).toBe(201);
    return created.json.id;
  }

  // The last round with a webhook on the account: then the updates of a batch share one transaction.
  for (const [round, withWebhook] of [
    [1, false],
    [2, false],
    [3, true],
  ] as const) {
    it(`come out as if each took a transaction of its own (round ${round}${withWebhook ? ', with a webhook' : ''})`, async () => {
      const random = seededRandom(20261125 + round);
      if (withWebhook) {
        const hook = await call('POST', '/api/v1/webhooks', { name: 'Never called', url: 'https://93.184.215.14/never', events: ['custom.never'] });
        expect(hook.status, hook.body).toBe(201);
      }
      const statementsBefore = statementSizes.length;
      const sensors: string[] = [];
      for (let index = 0; index < 4; index++) sensors.push(await create({ name: `Sensor ${index}`, type: 'sensor', state: 0, tags: ['a'] }));
      const guarded = await create({ name: 'Guarded', type: 'sensor', state: 0 });
      const tagged = await create({ name: 'Tagged', type: 'text', state: 'x', tags: ['a'] });
      const toggle = await create({ name: 'Toggle', type: 'switch', state: false });
      const noted = await create({ name: 'Noted', type: 'text', state: 'n' });
      // Read once, so that the account's resources are held in memory before the updates.
      expect((await call('GET', '/api/v1/resources?limit=1')).status).toBe(200);
      const before = (await call('GET', '/api/v1/events?after=0&limit=1000')).json.cursor as number;

      const sent: Sent[] = Array.from({ length: 150 }, (_, index) => {
        const choice = random(20);
        if (choice < 9) return { kind: 'state', id: sensors[random(4)]!, body: { state: index + 0.5 } };
        if (choice < 11) return { kind: 'guarded', id: guarded, body: { name: `Guarded ${index}` }, ifMatch: '"1"' };
        if (choice < 12) return { kind: 'missing', id: `res_${'m'.repeat(22)}`, body: { state: 1 } };
        if (choice < 13) return { kind: 'refused', id: toggle, body: { state: 'not a boolean' } };
        if (choice < 15) return { kind: 'tags', id: tagged, body: { tags: ['b', `t${index}`] } };
        if (choice < 16) return { kind: 'state', id: toggle, body: { state: index % 2 === 0 } };
        return { kind: 'attributes', id: noted, body: { attributes: { index, nested: { list: [index, null, 'ü'] } } } };
      });
      const responses = await Promise.all(
        sent.map((request) => call('PATCH', `/api/v1/resources/${request.id}`, request.body, request.ifMatch ? { 'if-match': request.ifMatch } : {})),
      );

      // Each answer is the one a transaction of its own would give.
      const guardedAnswers = responses.filter((_, index) => sent[index]!.kind === 'guarded').map((response) => response.status);
      expect(guardedAnswers.filter((status) => status === 200)).toHaveLength(Math.min(1, guardedAnswers.length));
      expect(guardedAnswers.filter((status) => status !== 200).every((status) => status === 412)).toBe(true);
      for (const [index, response] of responses.entries()) {
        const { kind } = sent[index]!;
        if (kind === 'missing') expect(response.json.error.code, response.body).toBe('not_found');
        else if (kind === 'refused') expect([response.status, response.json.error.details[0].path], response.body).toEqual([400, '/state']);
        else if (kind === 'guarded' && response.status === 412) expect(response.json.error.details[0].currentVersion).toBe(2);
        else expect(response.status, response.body).toBe(200);
      }

      // Every update that succeeded is one event, in an unbroken run of ids after `before`; nothing else was written.
      const succeeded = responses.filter((response) => response.status === 200).map((response) => response.json);
      const page = await call('GET', `/api/v1/events?after=${before}&limit=1000`);
      const events = page.json.data as Event[];
      expect(events.map((event) => event.id)).toEqual(succeeded.map((_, index) => before + 1 + index));
      expect(events.every((event) => event.type === 'resource.updated')).toBe(true);
      const byIdAndVersion = new Map(succeeded.map((resource) => [`${resource.id} ${resource.version}`, resource]));
      for (const event of events) {
        const resource = (event.data as { resource: { id: string; version: number } }).resource;
        expect(resource).toEqual(byIdAndVersion.get(`${resource.id} ${resource.version}`));
      }
      // Each resource's versions follow one another in the order of the log.
      const versionsInLog = new Map<string, number[]>();
      for (const event of events) {
        const resource = (event.data as { resource: { id: string; version: number } }).resource;
        versionsInLog.set(resource.id, [...(versionsInLog.get(resource.id) ?? []), resource.version]);
      }
      for (const versions of versionsInLog.values()) expect(versions).toEqual(versions.map((_, index) => index + 2));

      // What this app holds in memory is what storage holds, and each resource is its newest answer.
      const urls = [
        ...[...sensors, guarded, tagged, toggle, noted].map((id) => `/api/v1/resources/${id}`),
        '/api/v1/resources?tag=a&limit=500',
        '/api/v1/resources?tag=b&limit=500',
        '/api/v1/resources?type=text&limit=500',
      ];
      const fresh = await TestApp.start({ env: { DATABASE_URL: database.url } });
      try {
        for (const url of urls) {
          const fromMemory = await call('GET', url);
          const fromStorage = await fresh.request({ url, key: caller.key });
          expect(fromMemory.body, url).toBe(fromStorage.body);
        }
      } finally {
        await fresh.close();
      }
      for (const id of [...sensors, guarded, tagged, toggle, noted]) {
        const newest = succeeded.filter((resource) => resource.id === id).sort((a, b) => b.version - a.version)[0];
        const stored = await call('GET', `/api/v1/resources/${id}`);
        expect(stored.json).toEqual(newest ?? expect.objectContaining({ version: 1 }));
      }
      if (withWebhook) expect(statementSizes.length).toBe(statementsBefore);
    });
  }

  it(ON_POSTGRES ? 'wrote updates that waited together in one statement' : 'wrote no update outside a transaction on SQLite', () => {
    if (ON_POSTGRES) expect(Math.max(...statementSizes)).toBeGreaterThan(1);
    else expect(statementSizes).toEqual([]);
  });
});
