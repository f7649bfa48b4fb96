// The Home Assistant integration: its information document, and a snapshot of every resource
// with the event cursor that continues it, so that following events from the cursor misses
// nothing and repeats nothing (docs/decisions.md: "Home Assistant", "Events and streams").
import { describe, expect, it } from 'vitest';
import { useTestApp, type TestResponse } from '../support/app.js';
import { expectError } from '../support/expect.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface Resource {
  id: string;
  name: string;
  type: string;
  state: unknown;
  attributes: Record<string, unknown>;
  tags: string[];
  version: number;
  createdAt: string;
  updatedAt: string;
}

interface EventBody {
  id: number;
  type: string;
  data: { resource?: Resource; changed?: string[] } & Record<string, unknown>;
  createdAt: string;
}

interface Snapshot {
  resources: Resource[];
  cursor: number;
  oldestCursor: number;
  generatedAt: string;
}

/** Applies resource events to a list of resources kept in creation order. */
function apply(resources: Resource[], events: EventBody[]): Resource[] {
  const result = [...resources];
  for (const event of events) {
    const resource = event.data.resource;
    if (!event.type.startsWith('resource.') || !resource) continue;
    const index = result.findIndex((candidate) => candidate.id === resource.id);
    switch (event.type) {
      case 'resource.created':
        expect(index, `event ${event.id} creates ${resource.id} twice`).toBe(-1);
        result.push(resource);
        break;
      case 'resource.updated':
        expect(index, `event ${event.id} updates unknown ${resource.id}`).toBeGreaterThanOrEqual(0);
        // Versions advance one by one: a repeated or missed update would show here.
        expect(resource.version, `event ${event.id} version`).toBe((result[index] as Resource).version + 1);
        result[index] = resource;
        break;
      case 'resource.deleted':
        expect(index, `event ${event.id} deletes unknown ${resource.id}`).toBeGreaterThanOrEqual(0);
        result.splice(index, 1);
        break;
    }
  }
  return result;
}

describe('Home Assistant integration', () => {
  const app = useTestApp();

  async function createResource(key: string, body: Record<string, unknown>): Promise<Resource> {
    const response = await app().request({ method: 'POST', url: '/api/v1/resources', key, body });
    expect(response.status, response.body).toBe(201);
    return response.json as Resource;
  }

  async function snapshot(key: string): Promise<Snapshot> {
    const response = await app().request({ url: '/api/v1/integrations/home-assistant/snapshot', key });
    expect(response.status, response.body).toBe(200);
    return response.json as Snapshot;
  }

  async function eventsAfter(key: string, after: number, upTo = Infinity): Promise<EventBody[]> {
    const events: EventBody[] = [];
    for (;;) {
      const response = await app().request({ url: `/api/v1/events?after=${after}&limit=1000`, key });
      expect(response.status, response.body).toBe(200);
      events.push(...(response.json.data as EventBody[]));
      after = response.json.cursor;
      if (!response.json.hasMore) return events.filter((event) => event.id <= upTo);
    }
  }

  async function allResources(key: string): Promise<Resource[]> {
    const response = await app().request({ url: '/api/v1/resources?limit=500', key });
    expect(response.status, response.body).toBe(200);
    expect(response.json.hasMore).toBe(false);
    return response.json.data as Resource[];
  }

  describe('GET /api/v1/integrations/home-assistant', () => {
    it('describes the integration', async () => {
      const caller = await app().account(['integrations:read']);
      const response = await app().request({ url: '/api/v1/integrations/home-assistant', key: caller.key });
      expect(response.status, response.body).toBe(200);
      expect(response.json).toMatchObject({
        domain: expect.stringMatching(/^[a-z0-9_]+$/),
        version: '1.3.0',
        supportedResourceTypes: ['sensor', 'binary_sensor', 'switch', 'text'],
      });
      expect(response.json).toHaveProperty('installationId');
      expect(response.json.installationId === null || typeof response.json.installationId === 'string').toBe(true);

      const endpoints = response.json.endpoints as Record<string, string>;
      expect(endpoints).toMatchObject({
        snapshot: '/api/v1/integrations/home-assistant/snapshot',
        resources: '/api/v1/resources',
        events: '/api/v1/events',
        stream: '/api/v1/events/stream',
      });
      // Every endpoint it names exists (answers with something other than 404 for an allowed caller).
      const everything = await app().account();
      for (const path of Object.values(endpoints)) {
        if (path.endsWith('/stream')) continue; // would stay open
        const probe = await app().request({ url: path, key: everything.key });
        expect(probe.status, path).toBe(200);
      }
    });

    it('needs integrations:read (403) and a credential (401)', async () => {
      const caller = await app().account(['resources:read', 'events:read']);
      const forbidden = await app().request({ url: '/api/v1/integrations/home-assistant', key: caller.key });
      expectError(forbidden, 403, 'insufficient_scope');
      expect(forbidden.headers['www-authenticate']).toContain('scope="integrations:read"');
      const anonymous = await app().request({ url: '/api/v1/integrations/home-assistant' });
      expectError(anonymous, 401, 'unauthorized');
      expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="devdata"');
    });
  });

  describe('GET /api/v1/integrations/home-assistant/snapshot', () => {
    it('needs both integrations:read and resources:read', async () => {
      for (const scopes of [['integrations:read'], ['resources:read'], ['events:read', 'resources:write']] as const) {
        const caller = await app().account([...scopes]);
        const response = await app().request({ url: '/api/v1/integrations/home-assistant/snapshot', key: caller.key });
        expectError(response, 403, 'insufficient_scope');
        expect(response.body).not.toContain('"resources":[');
      }
      const anonymous = await app().request({ url: '/api/v1/integrations/home-assistant/snapshot' });
      expectError(anonymous, 401, 'unauthorized');

      const both = await app().account(['integrations:read', 'resources:read']);
      const response = await app().request({ url: '/api/v1/integrations/home-assistant/snapshot', key: both.key });
      expect(response.status, response.body).toBe(200);
    });

    it('is empty at cursor 0 for a new account', async () => {
      const caller = await app().account(['integrations:read', 'resources:read']);
      const before = Date.now();
      const body = await snapshot(caller.key);
      expect(body).toEqual({ resources: [], cursor: 0, oldestCursor: 0, generatedAt: expect.stringMatching(ISO_MS) });
      expect(Date.parse(body.generatedAt)).toBeGreaterThanOrEqual(before - 1);
      expect(Date.parse(body.generatedAt)).toBeLessThanOrEqual(Date.now() + 1);
    });

    it('holds every resource in creation order, with the newest event id as cursor', async () => {
      const caller = await app().account();
      const created: Resource[] = [];
      created.push(await createResource(caller.key, { name: 'Temperature', type: 'sensor', state: 21.5, attributes: { unit_of_measurement: '°C' } }));
      created.push(await createResource(caller.key, { name: 'Door', type: 'binary_sensor', state: false, tags: ['entry'] }));
      created.push(await createResource(caller.key, { name: 'Lamp', type: 'switch', state: true }));
      created.push(await createResource(caller.key, { name: 'Note', type: 'text', state: 'hello' }));
      for (let i = 0; i < 60; i++) created.push(await createResource(caller.key, { name: `extra ${i}`, type: 'sensor', state: i }));
      // Changes after creation do not reorder; deleted ones disappear; custom events move the cursor.
      const patched = await app().request({ method: 'PATCH', url: `/api/v1/resources/${created[0]?.id}`, key: caller.key, body: { state: 22 } });
      expect(patched.status).toBe(200);
      created[0] = patched.json as Resource;
      expect((await app().request({ method: 'DELETE', url: `/api/v1/resources/${created[2]?.id}`, key: caller.key })).status).toBe(204);
      created.splice(2, 1);
      const custom = await app().request({ method: 'POST', url: '/api/v1/events', key: caller.key, body: { type: 'custom.x', data: {} } });
      expect(custom.json.id).toBe(67);

      const body = await snapshot(caller.key);
      expect(body.resources).toEqual(created);
      expect(body.resources).toHaveLength(63);
      expect(body.resources).toEqual(await allResources(caller.key));
      expect(body.cursor).toBe(67);
      expect(body.oldestCursor).toBe(0);

      // Another account's snapshot shows none of them.
      const other = await app().account(['integrations:read', 'resources:read']);
      expect((await snapshot(other.key)).resources).toEqual([]);
    });

    it('is consistent with its cursor while writers are busy: snapshot + events from the cursor = the final state', async () => {
      const caller = await app().account();
      const initial: Resource[] = [];
      for (let i = 0; i < 12; i++) initial.push(await createResource(caller.key, { name: `device ${i}`, type: 'sensor', state: 0, tags: [`t${i % 3}`] }));
      const startCursor = 12;

      // Five writers, each a chain of changes: PATCHes of devices 0-9, new devices, deleting 10 and 11.
      let completed = 0;
      let release: () => void = () => {};
      const halfway = new Promise<void>((resolve) => (release = resolve));
      const writer = async (w: number): Promise<void> => {
        for (let step = 0; step < 40; step++) {
          let response: TestResponse;
          if (step === 10 && w < 2) {
            response = await app().request({ method: 'DELETE', url: `/api/v1/resources/${initial[10 + w]?.id}`, key: caller.key });
          } else if (step % 8 === 7) {
            response = await app().request({
              method: 'POST',
              url: '/api/v1/resources',
              key: caller.key,
              body: { name: `new ${w}.${step}`, type: 'text', state: `w${w}` },
            });
          } else if (step % 8 === 3) {
            response = await app().request({ method: 'POST', url: '/api/v1/events', key: caller.key, body: { type: 'custom.noise', data: { w, step } } });
          } else {
            const target = initial[(w * 3 + step) % 10] as Resource;
            response = await app().request({
              method: 'PATCH',
              url: `/api/v1/resources/${target.id}`,
              key: caller.key,
              body: step % 2 === 0 ? { state: w * 1000 + step } : { attributes: { w, step }, name: `device ${w}-${step}` },
            });
          }
          expect(response.status, response.body).toBeLessThan(300);
          if (++completed === 80) release();
        }
      };
      const writers = Promise.all([0, 1, 2, 3, 4].map(writer));

      await halfway;
      const snap = await snapshot(caller.key);
      await writers;
      const total = 12 + 5 * 40;

      // Taken mid-way: some writes are in it and some are not.
      expect(snap.cursor).toBeGreaterThan(startCursor + 80 - 1);
      expect(snap.cursor).toBeLessThan(total);
      expect(snap.oldestCursor).toBe(0);

      // The snapshot is exactly the log folded up to its cursor: nothing beyond it, nothing missing.
      const upToCursor = await eventsAfter(caller.key, 0, snap.cursor);
      expect(upToCursor.map((event) => event.id)).toEqual(Array.from({ length: snap.cursor }, (_, i) => i + 1));
      expect(snap.resources).toEqual(apply([], upToCursor));

      // Following from the cursor: no event at or before it, every later one, and the result is the final state.
      const followUp = await eventsAfter(caller.key, snap.cursor);
      expect(followUp.every((event) => event.id > snap.cursor)).toBe(true);
      expect(followUp.map((event) => event.id)).toEqual(Array.from({ length: total - snap.cursor }, (_, i) => snap.cursor + 1 + i));
      const final = await allResources(caller.key);
      expect(apply(snap.resources, followUp)).toEqual(final);
      expect(final).toHaveLength(12 - 2 + 5 * 5);

      // A fresh snapshot now equals the final state at the newest cursor.
      const after = await snapshot(caller.key);
      expect(after.cursor).toBe(total);
      expect(after.resources).toEqual(final);
    });
  });
});
