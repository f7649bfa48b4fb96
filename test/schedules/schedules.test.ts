import { describe, expect, it } from 'vitest';
import { ManualClock, useTestApp, type TestAccount, type TestResponse } from '../support/app.js';
import { expectError } from '../support/expect.js';
import { allEvents, executedEvents, schedulerPassed } from './support.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MINUTE = 60_000;
// A Monday in winter (Berlin is UTC+1, New York UTC-5), 30 seconds past nine UTC.
const START = new Date('2030-01-07T09:00:30.000Z');

function expectInvalid(response: TestResponse, path: string): void {
  expectError(response, 400, 'invalid_request');
  expect(
    response.json.error.details?.map((detail: { path: string }) => detail.path),
    response.body,
  ).toContain(path);
}

describe('schedules', () => {
  const clock = new ManualClock(new Date(START));
  const app = useTestApp({ clock });

  const post = (key: string, url: string, body?: unknown) => app().request({ method: 'POST', url, key, body });
  const createSchedule = (key: string, body: Record<string, unknown>) => post(key, '/api/v1/schedules', body);
  const patchSchedule = (key: string, id: string, body: unknown) => app().request({ method: 'PATCH', url: `/api/v1/schedules/${id}`, key, body });
  const getSchedule = (key: string, id: string) => app().request({ url: `/api/v1/schedules/${id}`, key });

  async function createResource(caller: TestAccount, body: Record<string, unknown>): Promise<{ id: string; version: number }> {
    const response = await post(caller.key, '/api/v1/resources', body);
    expect(response.status, response.body).toBe(201);
    return response.json;
  }

  async function created(caller: TestAccount, body: Record<string, unknown>): Promise<Record<string, any>> {
    const response = await createSchedule(caller.key, body);
    expect(response.status, response.body).toBe(201);
    return response.json;
  }

  /** The next whole `minutes` mark strictly after the clock, as a Date. */
  function nextMark(minutes: number): Date {
    const step = minutes * MINUTE;
    return new Date(Math.floor(clock.now().getTime() / step) * step + step);
  }

  /** Moves the clock to `target` (never backwards). */
  function advanceTo(target: Date): void {
    const by = target.getTime() - clock.now().getTime();
    expect(by).toBeGreaterThanOrEqual(0);
    clock.advance(by);
  }

  describe('POST /api/v1/schedules', () => {
    it('creates a cron schedule (201) with its next run, and records schedule.created', async () => {
      const caller = await app().account();
      const lamp = await createResource(caller, { name: 'Lamp', type: 'switch', state: false });
      const response = await createSchedule(caller.key, {
        name: '  Lamp on every five minutes ',
        cron: '*/5 * * * *',
        action: { type: 'set_state', resourceId: lamp.id, state: true },
      });
      expect(response.status, response.body).toBe(201);
      const now = clock.now().toISOString();
      expect(response.json).toEqual({
        id: expect.stringMatching(/^sch_[A-Za-z0-9_-]{22,}$/),
        name: 'Lamp on every five minutes',
        cron: '*/5 * * * *',
        at: null,
        timezone: 'UTC',
        action: { type: 'set_state', resourceId: lamp.id, state: true },
        enabled: true,
        disabledReason: null,
        nextRunAt: nextMark(5).toISOString(),
        lastRunAt: null,
        createdAt: now,
        updatedAt: now,
      });
      const id = response.json.id as string;
      expect((await getSchedule(caller.key, id)).json).toEqual(response.json);
      const list = await app().request({ url: '/api/v1/schedules', key: caller.key });
      expect(list.status).toBe(200);
      expect(list.json).toEqual({ data: [response.json] });

      const audit = await app().request({ url: '/api/v1/audit?type=schedule.created', key: caller.key });
      expect(audit.json.data).toEqual([
        expect.objectContaining({ type: 'schedule.created', actor: { kind: 'api_key', id: caller.keyId }, target: { type: 'schedule', id } }),
      ]);
    });

    it('works out the next run in the schedule’s IANA time zone', async () => {
      const caller = await app().account();
      const base = { action: { type: 'publish_event', eventType: 'custom.tick', data: {} } };
      const berlin = await created(caller, { ...base, name: 'Berlin nine', cron: '0 9 * * *', timezone: 'Europe/Berlin' });
      const newYork = await created(caller, { ...base, name: 'New York nine', cron: '0 9 * * *', timezone: 'America/New_York' });
      const utc = await created(caller, { ...base, name: 'UTC weekdays', cron: '30 23 * * 1-5' });
      const day = clock.now().toISOString().slice(0, 10);
      // 09:00 in Berlin (UTC+1 in January) has passed today; in New York (UTC-5) it is still ahead.
      expect(Date.parse(berlin.nextRunAt)).toBe(Date.parse(`${day}T08:00:00.000Z`) + 86_400_000);
      expect(berlin.timezone).toBe('Europe/Berlin');
      expect(newYork.nextRunAt).toBe(`${day}T14:00:00.000Z`);
      expect(utc.nextRunAt).toBe(`${day}T23:30:00.000Z`);
    });

    it('creates a one-shot schedule from an ISO time in any offset, stored in UTC', async () => {
      const caller = await app().account();
      const when = new Date(clock.now().getTime() + 90 * MINUTE);
      const withOffset = `${new Date(when.getTime() + 2 * 3_600_000).toISOString().slice(0, 19)}+02:00`;
      const schedule = await created(caller, {
        name: 'Once',
        at: withOffset,
        action: { type: 'publish_event', eventType: 'custom.once', data: { hello: 'world' } },
        enabled: true,
      });
      expect(schedule).toMatchObject({ cron: null, at: when.toISOString().replace(/\.\d{3}Z$/, '.000Z'), nextRunAt: schedule.at, enabled: true });
      const disabled = await created(caller, {
        name: 'Later',
        at: when.toISOString(),
        action: { type: 'publish_event', eventType: 'custom.x', data: {} },
        enabled: false,
      });
      expect(disabled).toMatchObject({ enabled: false, nextRunAt: null });
    });

    it('refuses bad timing with 400 and details, writing nothing', async () => {
      const caller = await app().account();
      const action = { type: 'publish_event', eventType: 'custom.tick', data: {} };
      const past = new Date(clock.now().getTime() - 1000).toISOString();
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ name: 'x', cron: '61 * * * *', action }, '/cron'],
        [{ name: 'x', cron: '* * * *', action }, '/cron'],
        [{ name: 'x', cron: '0 * * * * *', action }, '/cron'],
        [{ name: 'x', cron: 'every minute please', action }, '/cron'],
        [{ name: 'x', cron: '@daily', action }, '/cron'],
        [{ name: 'x', cron: '0 0 30 2 *', action }, '/cron'],
        [{ name: 'x', cron: '* * * * *', timezone: 'Mars/Olympus_Mons', action }, '/timezone'],
        [{ name: 'x', cron: '* * * * *', timezone: '', action }, '/timezone'],
        [{ name: 'x', cron: '* * * * *', at: new Date(clock.now().getTime() + MINUTE).toISOString(), action }, '/cron'],
        [{ name: 'x', action }, '/cron'],
        [{ name: 'x', at: past, action }, '/at'],
        [{ name: 'x', at: past, enabled: false, action }, '/at'],
        [{ name: 'x', at: 'tomorrow', action }, '/at'],
        [{ name: 'x', at: '2031-01-01T10:00:00', action }, '/at'],
        [{ name: 'x', at: '2031-12-31T23:59:60Z', action }, '/at'],
        [{ name: 'x', at: 1_900_000_000_000, action }, '/at'],
        [{ cron: '* * * * *', action }, '/name'],
        [{ name: '', cron: '* * * * *', action }, '/name'],
        [{ name: '\u0007', cron: '* * * * *', action }, '/name'],
        [{ name: 'x'.repeat(101), cron: '* * * * *', action }, '/name'],
        [{ name: 'x', cron: '* * * * *' }, '/action'],
        [{ name: 'x', cron: '* * * * *', action, color: 'red' }, '/color'],
        [{ name: 'x', cron: '* * * * *', action, enabled: 'yes' }, '/enabled'],
      ];
      for (const [body, path] of cases) expectInvalid(await createSchedule(caller.key, body), path);
      expect((await app().request({ url: '/api/v1/schedules', key: caller.key })).json.data).toEqual([]);
    });

    it('validates the action at creation: 400 for an unknown resource, a state that does not fit, a non-custom event type', async () => {
      const caller = await app().account();
      const other = await app().account();
      const lamp = await createResource(caller, { name: 'Lamp', type: 'switch', state: false });
      const thermometer = await createResource(caller, { name: 'Thermometer', type: 'sensor', state: 20 });
      const foreign = await createResource(other, { name: 'Not yours', type: 'switch', state: false });
      const base = { name: 'x', cron: '* * * * *' };
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ type: 'set_state', resourceId: 'res_doesnotexist0000000000', state: true }, '/action/resourceId'],
        [{ type: 'set_state', resourceId: foreign.id, state: true }, '/action/resourceId'],
        [{ type: 'set_state', resourceId: lamp.id, state: 'on' }, '/action/state'],
        [{ type: 'set_state', resourceId: lamp.id, state: 1 }, '/action/state'],
        [{ type: 'set_state', resourceId: thermometer.id, state: true }, '/action/state'],
        [{ type: 'set_state', resourceId: thermometer.id, state: 'x'.repeat(256) }, '/action/state'],
        // The action's `type` names its kind, and the error the field of that kind.
        [{ type: 'set_state', resourceId: lamp.id }, '/action/state'],
        [{ type: 'publish_event', eventType: 'resource.updated', data: {} }, '/action/eventType'],
        [{ type: 'publish_event', eventType: 'schedule.executed', data: {} }, '/action/eventType'],
        [{ type: 'publish_event', eventType: 'custom.', data: {} }, '/action/eventType'],
        [{ type: 'publish_event', eventType: 'custom.has space', data: {} }, '/action/eventType'],
        [{ type: 'publish_event', eventType: 'custom.tick', data: [] }, '/action/data'],
        [{ type: 'publish_event', eventType: 'custom.tick', data: { big: 'x'.repeat(70_000) } }, '/action/data'],
        [{ type: 'publish_event', eventType: 'custom.tick' }, '/action/data'],
        [{ type: 'delete_everything' }, '/action/type'],
        [{ type: 'set_state', resourceId: lamp.id, state: true, extra: 1 }, '/action/extra'],
      ];
      for (const [action, path] of cases) expectInvalid(await createSchedule(caller.key, { ...base, action }), path);
      expect((await app().request({ url: '/api/v1/schedules', key: caller.key })).json.data).toEqual([]);
      // A sensor takes a number or a string; a text resource a string.
      await created(caller, { ...base, action: { type: 'set_state', resourceId: thermometer.id, state: 'high' } });
      await created(caller, { ...base, action: { type: 'set_state', resourceId: thermometer.id, state: 21.5 } });
    });

    it('needs resources:write for set_state and events:write for publish_event (403), beside schedules:manage', async () => {
      const owner = await app().account();
      const lamp = await createResource(owner, { name: 'Lamp', type: 'switch', state: false });
      const onlySchedules = await app().account(['schedules:manage']);
      const setState = { name: 'x', cron: '* * * * *', action: { type: 'set_state', resourceId: lamp.id, state: true } };
      const publish = { name: 'x', cron: '* * * * *', action: { type: 'publish_event', eventType: 'custom.tick', data: {} } };
      const refused = await createSchedule(onlySchedules.key, publish);
      expectError(refused, 403, 'insufficient_scope');
      expect(refused.headers['www-authenticate']).toBe('Bearer realm="devdata", error="insufficient_scope", scope="schedules:manage events:write"');
      const refusedState = await createSchedule(onlySchedules.key, { ...setState, action: { ...setState.action, resourceId: 'res_whatever' } });
      expectError(refusedState, 403, 'insufficient_scope');
      expect(refusedState.headers['www-authenticate']).toContain('scope="schedules:manage resources:write"');

      const withEvents = await app().account(['schedules:manage', 'events:write']);
      expect((await createSchedule(withEvents.key, publish)).status).toBe(201);
      const noSchedules = await app().account(['resources:write', 'events:write', 'resources:read']);
      const denied = await createSchedule(noSchedules.key, publish);
      expectError(denied, 403, 'insufficient_scope');
      expect(denied.headers['www-authenticate']).toContain('scope="schedules:manage"');
      expect((await createSchedule(owner.key, setState)).status).toBe(201);
    });

    it('answers 401 without a credential and 415 without JSON', async () => {
      const caller = await app().account();
      const body = { name: 'x', cron: '* * * * *', action: { type: 'publish_event', eventType: 'custom.tick', data: {} } };
      const anonymous = await app().request({ method: 'POST', url: '/api/v1/schedules', body });
      expectError(anonymous, 401, 'unauthorized');
      expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="devdata"');
      expectError(
        await app().request({
          method: 'POST',
          url: '/api/v1/schedules',
          key: caller.key,
          body: JSON.stringify(body),
          headers: { 'content-type': 'text/plain' },
        }),
        415,
        'unsupported_media_type',
      );
      expectError(
        await app().request({ method: 'POST', url: '/api/v1/schedules', key: caller.key, body: Buffer.from(JSON.stringify(body)) }),
        415,
        'unsupported_media_type',
      );
      expectError(
        await app().request({ method: 'POST', url: '/api/v1/schedules', key: caller.key, body: '{"name":', headers: { 'content-type': 'application/json' } }),
        400,
        'invalid_request',
      );
      expect((await app().request({ url: '/api/v1/schedules', key: caller.key })).json.data).toEqual([]);
    });
  });

  describe('reading, changing and deleting', () => {
    it('hides another account’s schedules (404 on every route) and needs schedules:manage (403)', async () => {
      const owner = await app().account();
      const stranger = await app().account();
      const schedule = await created(owner, { name: 'Mine', cron: '0 * * * *', action: { type: 'publish_event', eventType: 'custom.tick', data: {} } });
      const url = `/api/v1/schedules/${schedule.id}`;
      expectError(await app().request({ url, key: stranger.key }), 404, 'not_found');
      expectError(await app().request({ method: 'PATCH', url, key: stranger.key, body: { name: 'Stolen' } }), 404, 'not_found');
      expectError(await app().request({ method: 'DELETE', url, key: stranger.key }), 404, 'not_found');
      expectError(await app().request({ method: 'POST', url: `${url}/run`, key: stranger.key }), 404, 'not_found');
      expect((await app().request({ url: '/api/v1/schedules', key: stranger.key })).json.data).toEqual([]);
      for (const missing of ['/api/v1/schedules/sch_doesnotexist000000000', '/api/v1/schedules/sch_doesnotexist000000000/run']) {
        expectError(await app().request({ method: missing.endsWith('/run') ? 'POST' : 'GET', url: missing, key: owner.key }), 404, 'not_found');
      }
      expect((await getSchedule(owner.key, schedule.id)).json.name).toBe('Mine');

      const reader = await app().account(['resources:read', 'events:read', 'events:write', 'resources:write']);
      for (const [method, path] of [
        ['GET', '/api/v1/schedules'],
        ['GET', url],
        ['PATCH', url],
        ['DELETE', url],
        ['POST', `${url}/run`],
      ] as const) {
        const response = await app().request({ method, url: path, key: reader.key, body: method === 'PATCH' ? { name: 'x' } : undefined });
        expectError(response, 403, 'insufficient_scope');
      }
      for (const [method, path] of [
        ['GET', '/api/v1/schedules'],
        ['GET', url],
        ['DELETE', url],
        ['POST', `${url}/run`],
      ] as const) {
        expectError(await app().request({ method, url: path }), 401, 'unauthorized');
      }
      expect((await getSchedule(owner.key, schedule.id)).status).toBe(200);
    });

    it('PATCH renames without moving the next run, retimes on a new cron, swaps cron for at, and pauses', async () => {
      const caller = await app().account();
      const schedule = await created(caller, { name: 'Hourly', cron: '0 * * * *', action: { type: 'publish_event', eventType: 'custom.tick', data: {} } });
      const renamed = await patchSchedule(caller.key, schedule.id, { name: 'Every hour' });
      expect(renamed.status, renamed.body).toBe(200);
      expect(renamed.json).toEqual({ ...schedule, name: 'Every hour', updatedAt: clock.now().toISOString() });

      const retimed = await patchSchedule(caller.key, schedule.id, { cron: '*/15 * * * *', timezone: 'Asia/Kolkata' });
      expect(retimed.json).toMatchObject({ cron: '*/15 * * * *', timezone: 'Asia/Kolkata', at: null, nextRunAt: nextMark(15).toISOString() });

      const when = new Date(clock.now().getTime() + 3 * 3_600_000).toISOString();
      const oneShot = await patchSchedule(caller.key, schedule.id, { at: when });
      expect(oneShot.json).toMatchObject({ cron: null, at: when, nextRunAt: when });

      const paused = await patchSchedule(caller.key, schedule.id, { enabled: false });
      expect(paused.json).toMatchObject({ enabled: false, nextRunAt: null });
      const resumed = await patchSchedule(caller.key, schedule.id, { enabled: true, cron: '0 0 * * *' });
      expect(resumed.json).toMatchObject({ enabled: true, cron: '0 0 * * *', at: null });
      // Midnight in Kolkata (UTC+05:30) is 18:30 UTC.
      expect(resumed.json.nextRunAt).toMatch(/T18:30:00\.000Z$/);

      const changedAction = await patchSchedule(caller.key, schedule.id, { action: { type: 'publish_event', eventType: 'custom.tock', data: { n: 1 } } });
      expect(changedAction.json.action).toEqual({ type: 'publish_event', eventType: 'custom.tock', data: { n: 1 } });
      expect((await getSchedule(caller.key, schedule.id)).json).toEqual(changedAction.json);

      const audit = await app().request({ url: '/api/v1/audit?type=schedule.updated', key: caller.key });
      expect(audit.json.data).toHaveLength(6);
      expect(audit.json.data[0]).toMatchObject({ target: { type: 'schedule', id: schedule.id }, data: { changed: ['name'] } });
    });

    it('PATCH refuses what create refuses, and an empty or doubled change (400), leaving the schedule as it was', async () => {
      const caller = await app().account();
      const lamp = await createResource(caller, { name: 'Lamp', type: 'switch', state: false });
      const schedule = await created(caller, { name: 'Keep', cron: '0 * * * *', action: { type: 'set_state', resourceId: lamp.id, state: true } });
      const future = new Date(clock.now().getTime() + 3_600_000).toISOString();
      const cases: Array<[unknown, string | undefined]> = [
        [{}, undefined],
        [{ cron: '* * *' }, '/cron'],
        [{ timezone: 'Nowhere/Land' }, '/timezone'],
        [{ at: new Date(clock.now().getTime() - 1).toISOString() }, '/at'],
        [{ cron: '* * * * *', at: future }, '/cron'],
        [{ action: { type: 'set_state', resourceId: lamp.id, state: 'on' } }, '/action/state'],
        [{ action: { type: 'publish_event', eventType: 'resource.created', data: {} } }, '/action/eventType'],
        [{ name: '' }, '/name'],
        [{ unknown: true }, '/unknown'],
        [{ cron: null }, '/cron'],
      ];
      for (const [body, path] of cases) {
        const response = await patchSchedule(caller.key, schedule.id, body);
        if (path) expectInvalid(response, path);
        else expectError(response, 400, 'invalid_request');
      }
      expect((await getSchedule(caller.key, schedule.id)).json).toEqual(schedule);
      expectError(
        await app().request({
          method: 'PATCH',
          url: `/api/v1/schedules/${schedule.id}`,
          key: caller.key,
          body: 'name=x',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
        415,
        'unsupported_media_type',
      );
    });

    it('PATCH to an action (or switching on one) the caller lacks the scope for is 403', async () => {
      const caller = await app().account();
      const lamp = await createResource(caller, { name: 'Lamp', type: 'switch', state: false });
      const schedule = await created(caller, { name: 'Publisher', cron: '0 * * * *', action: { type: 'publish_event', eventType: 'custom.tick', data: {} } });
      const limited = await app().request({
        method: 'POST',
        url: '/api/v1/keys',
        key: caller.key,
        body: { name: 'limited', scopes: ['schedules:manage', 'events:write'] },
      });
      const response = await patchSchedule(limited.json.key, schedule.id, { action: { type: 'set_state', resourceId: lamp.id, state: true } });
      expectError(response, 403, 'insufficient_scope');
      expect((await patchSchedule(limited.json.key, schedule.id, { name: 'Renamed' })).status).toBe(200);
      // Switching a set_state schedule on needs resources:write too; pausing or renaming it does not.
      const lampSchedule = await created(caller, { name: 'Lamp', cron: '0 * * * *', action: { type: 'set_state', resourceId: lamp.id, state: true } });
      expect((await patchSchedule(limited.json.key, lampSchedule.id, { enabled: false, cron: '5 * * * *' })).status).toBe(200);
      expectError(await patchSchedule(limited.json.key, lampSchedule.id, { enabled: true }), 403, 'insufficient_scope');
      expect((await patchSchedule(caller.key, lampSchedule.id, { enabled: true })).json).toMatchObject({ enabled: true, cron: '5 * * * *' });
    });

    it('DELETE answers 204, then the schedule is gone (404) and schedule.deleted is recorded', async () => {
      const caller = await app().account();
      const schedule = await created(caller, { name: 'Bye', cron: '0 * * * *', action: { type: 'publish_event', eventType: 'custom.tick', data: {} } });
      const deleted = await app().request({ method: 'DELETE', url: `/api/v1/schedules/${schedule.id}`, key: caller.key });
      expect(deleted.status).toBe(204);
      expect(deleted.body).toBe('');
      expectError(await getSchedule(caller.key, schedule.id), 404, 'not_found');
      expectError(await app().request({ method: 'DELETE', url: `/api/v1/schedules/${schedule.id}`, key: caller.key }), 404, 'not_found');
      const audit = await app().request({ url: '/api/v1/audit?type=schedule.*', key: caller.key });
      expect(audit.json.data.map((record: { type: string }) => record.type)).toEqual(['schedule.created', 'schedule.deleted']);
      expect(audit.json.data[1]).toMatchObject({ actor: { kind: 'api_key', id: caller.keyId }, target: { type: 'schedule', id: schedule.id } });
    });
  });

  describe('POST /api/v1/schedules/{id}/run', () => {
    it('runs the action now: the custom event and schedule.executed, the timing unchanged', async () => {
      const caller = await app().account();
      const schedule = await created(caller, { name: 'Ping', cron: '0 0 * * *', action: { type: 'publish_event', eventType: 'custom.ping', data: { n: 1 } } });
      const run = await app().request({ method: 'POST', url: `/api/v1/schedules/${schedule.id}/run`, key: caller.key });
      expect(run.status, run.body).toBe(200);
      const now = clock.now().toISOString();
      expect(run.json).toEqual({ scheduleId: schedule.id, scheduledFor: now, executedAt: now, outcome: 'succeeded', eventId: 2 });
      const events = await allEvents(app(), caller.key);
      expect(events.map((event) => [event.id, event.type])).toEqual([
        [1, 'custom.ping'],
        [2, 'schedule.executed'],
      ]);
      expect(events[0]?.data).toEqual({ n: 1 });
      expect(events[1]?.data).toEqual({
        schedule: { id: schedule.id, name: 'Ping' },
        scheduledFor: now,
        executedAt: now,
        action: { type: 'publish_event', eventType: 'custom.ping', data: { n: 1 } },
        outcome: 'succeeded',
      });
      const after = (await getSchedule(caller.key, schedule.id)).json;
      expect(after).toMatchObject({ nextRunAt: schedule.nextRunAt, lastRunAt: now, enabled: true });
      // No body is needed; an empty JSON body is fine too.
      const again = await app().request({
        method: 'POST',
        url: `/api/v1/schedules/${schedule.id}/run`,
        key: caller.key,
        body: '',
        headers: { 'content-type': 'application/json' },
      });
      expect(again.status, again.body).toBe(200);
      expect(again.json.eventId).toBe(4);
    });

    it('needs the action’s scope too (403), and reports a vanished resource as a failed run (200)', async () => {
      const caller = await app().account();
      const lamp = await createResource(caller, { name: 'Lamp', type: 'switch', state: false });
      const schedule = await created(caller, { name: 'Lamp on', cron: '0 0 * * *', action: { type: 'set_state', resourceId: lamp.id, state: true } });
      const schedulesOnly = await app().request({
        method: 'POST',
        url: '/api/v1/keys',
        key: caller.key,
        body: { name: 'limited', scopes: ['schedules:manage'] },
      });
      const refused = await app().request({ method: 'POST', url: `/api/v1/schedules/${schedule.id}/run`, key: schedulesOnly.json.key });
      expectError(refused, 403, 'insufficient_scope');
      expect(refused.headers['www-authenticate']).toContain('scope="schedules:manage resources:write"');
      expect(await allEvents(app(), caller.key, 'schedule.executed')).toEqual([]);

      const ok = await app().request({ method: 'POST', url: `/api/v1/schedules/${schedule.id}/run`, key: caller.key });
      expect(ok.json.outcome).toBe('succeeded');
      const lampNow = await app().request({ url: `/api/v1/resources/${lamp.id}`, key: caller.key });
      expect(lampNow.json).toMatchObject({ state: true, version: 2 });

      expect((await app().request({ method: 'DELETE', url: `/api/v1/resources/${lamp.id}`, key: caller.key })).status).toBe(204);
      const failed = await app().request({ method: 'POST', url: `/api/v1/schedules/${schedule.id}/run`, key: caller.key });
      expect(failed.status, failed.body).toBe(200);
      expect(failed.json).toMatchObject({ scheduleId: schedule.id, outcome: 'failed', error: expect.stringContaining(lamp.id) });
      const executed = await allEvents(app(), caller.key, 'schedule.executed');
      expect(executed.at(-1)?.data).toMatchObject({
        outcome: 'failed',
        error: failed.json.error,
        action: { type: 'set_state', resourceId: lamp.id, state: true },
      });
      expect(executed.at(-1)?.id).toBe(failed.json.eventId);
    });
  });

  describe('the scheduler', () => {
    it('runs a cron schedule on time: resource.updated then schedule.executed, once per scheduled time', async () => {
      const caller = await app().account();
      const lamp = await createResource(caller, { name: 'Lamp', type: 'switch', state: false });
      const schedule = await created(caller, { name: 'Lamp toggle', cron: '*/5 * * * *', action: { type: 'set_state', resourceId: lamp.id, state: true } });
      const first = new Date(schedule.nextRunAt);

      // Just before the time nothing runs.
      advanceTo(new Date(first.getTime() - 1000));
      await schedulerPassed(app());
      expect(await allEvents(app(), caller.key, 'schedule.executed')).toEqual([]);

      advanceTo(new Date(first.getTime() + 200));
      const [executed] = await executedEvents(app(), caller.key, 1);
      const events = await allEvents(app(), caller.key);
      expect(events.map((event) => event.type)).toEqual(['resource.created', 'resource.updated', 'schedule.executed']);
      expect(events[1]?.data).toMatchObject({ resource: { id: lamp.id, state: true, version: 2 }, changed: ['state'] });
      expect(executed?.data).toEqual({
        schedule: { id: schedule.id, name: 'Lamp toggle' },
        scheduledFor: first.toISOString(),
        executedAt: expect.stringMatching(ISO_MS),
        action: { type: 'set_state', resourceId: lamp.id, state: true },
        outcome: 'succeeded',
      });
      expect(Date.parse(executed?.data.executedAt)).toBeGreaterThanOrEqual(first.getTime());
      const after = (await getSchedule(caller.key, schedule.id)).json;
      expect(after.nextRunAt).toBe(new Date(first.getTime() + 5 * MINUTE).toISOString());
      expect(after.lastRunAt).toMatch(ISO_MS);

      // Several more looks at the same time run nothing again.
      await schedulerPassed(app());
      await schedulerPassed(app());
      expect(await allEvents(app(), caller.key, 'schedule.executed')).toHaveLength(1);

      // The next time runs again (the state is already true: still a new version and event).
      advanceTo(new Date(first.getTime() + 5 * MINUTE));
      const both = await executedEvents(app(), caller.key, 2);
      expect(both.map((event) => event.data.scheduledFor)).toEqual([first.toISOString(), new Date(first.getTime() + 5 * MINUTE).toISOString()]);
      expect((await app().request({ url: `/api/v1/resources/${lamp.id}`, key: caller.key })).json.version).toBe(3);
      await app().request({ method: 'DELETE', url: `/api/v1/schedules/${schedule.id}`, key: caller.key });
    });

    it('runs a one-shot publish_event schedule once, then disables it', async () => {
      const caller = await app().account();
      const at = new Date(clock.now().getTime() + 10 * MINUTE);
      const schedule = await created(caller, {
        name: 'Reminder',
        at: at.toISOString(),
        timezone: 'Europe/Paris',
        action: { type: 'publish_event', eventType: 'custom.reminder', data: { text: 'stand up', nested: { ok: true } } },
      });
      advanceTo(new Date(at.getTime() + 500));
      const [executed] = await executedEvents(app(), caller.key, 1);
      const events = await allEvents(app(), caller.key);
      expect(events.map((event) => event.type)).toEqual(['custom.reminder', 'schedule.executed']);
      expect(events[0]?.data).toEqual({ text: 'stand up', nested: { ok: true } });
      expect(executed?.data).toMatchObject({ schedule: { id: schedule.id, name: 'Reminder' }, scheduledFor: at.toISOString(), outcome: 'succeeded' });
      const after = (await getSchedule(caller.key, schedule.id)).json;
      expect(after).toMatchObject({ enabled: false, nextRunAt: null, at: at.toISOString(), lastRunAt: expect.stringMatching(ISO_MS) });

      clock.advance(10 * MINUTE);
      await schedulerPassed(app());
      expect(await allEvents(app(), caller.key, 'schedule.executed')).toHaveLength(1);
      // Enabling it again needs a new time.
      expectInvalid(await patchSchedule(caller.key, schedule.id, { enabled: true }), '/at');
      const renewed = await patchSchedule(caller.key, schedule.id, { enabled: true, at: new Date(clock.now().getTime() + MINUTE).toISOString() });
      expect(renewed.status, renewed.body).toBe(200);
      expect(renewed.json.nextRunAt).toBe(renewed.json.at);
      await app().request({ method: 'DELETE', url: `/api/v1/schedules/${schedule.id}`, key: caller.key });
    });

    it('fails cleanly when the resource is gone: outcome failed with an error, no 500, and the other schedules still run', async () => {
      const caller = await app().account();
      const doomed = await createResource(caller, { name: 'Doomed', type: 'text', state: 'alive' });
      const survivor = await createResource(caller, { name: 'Survivor', type: 'sensor', state: 1 });
      const base = { cron: '*/10 * * * *' };
      const broken = await created(caller, { ...base, name: 'Broken', action: { type: 'set_state', resourceId: doomed.id, state: 'still here' } });
      const working = await created(caller, { ...base, name: 'Working', action: { type: 'set_state', resourceId: survivor.id, state: 2 } });
      expect((await app().request({ method: 'DELETE', url: `/api/v1/resources/${doomed.id}`, key: caller.key })).status).toBe(204);

      advanceTo(new Date(broken.nextRunAt));
      const executed = await executedEvents(app(), caller.key, 2);
      const byName = Object.fromEntries(executed.map((event) => [event.data.schedule.name, event.data]));
      expect(byName.Broken).toEqual({
        schedule: { id: broken.id, name: 'Broken' },
        scheduledFor: broken.nextRunAt,
        executedAt: expect.stringMatching(ISO_MS),
        action: { type: 'set_state', resourceId: doomed.id, state: 'still here' },
        outcome: 'failed',
        error: expect.stringContaining('no longer exists'),
      });
      expect(byName.Working).toMatchObject({ schedule: { id: working.id }, outcome: 'succeeded' });
      expect((await app().request({ url: `/api/v1/resources/${survivor.id}`, key: caller.key })).json.state).toBe(2);
      const types = (await allEvents(app(), caller.key)).map((event) => event.type);
      expect(types.filter((type) => type === 'resource.updated')).toHaveLength(1);

      // The broken schedule stays enabled and fails again next time; the scheduler itself never failed.
      expect((await getSchedule(caller.key, broken.id)).json).toMatchObject({
        enabled: true,
        nextRunAt: new Date(Date.parse(broken.nextRunAt) + 10 * MINUTE).toISOString(),
      });
      const status = await app().request({ url: '/api/v1/status' });
      expect(status.json.workers.scheduler.failures).toBe(0);
      // It can still be renamed and paused; switching it on again is refused while its resource is gone.
      expect((await patchSchedule(caller.key, broken.id, { name: 'Still broken', enabled: false })).status).toBe(200);
      expectInvalid(await patchSchedule(caller.key, broken.id, { enabled: true }), '/action/resourceId');
      for (const schedule of [broken, working]) await app().request({ method: 'DELETE', url: `/api/v1/schedules/${schedule.id}`, key: caller.key });
    });

    it('makes a missed run once (for its latest time) when under an hour late, and skips older ones', async () => {
      const caller = await app().account();
      const action = { type: 'publish_event', eventType: 'custom.tick', data: {} };
      const everyTen = await created(caller, { name: 'Every ten', cron: '*/10 * * * *', action });
      const hourAhead = new Date(clock.now().getTime() + 60 * MINUTE);
      const daily = await created(caller, { name: 'Daily', cron: `${hourAhead.getUTCMinutes()} ${hourAhead.getUTCHours()} * * *`, action });
      const oneShot = await created(caller, { name: 'Once', at: new Date(clock.now().getTime() + 5 * MINUTE).toISOString(), action });
      expect(daily.nextRunAt).toBe(new Date(Math.floor(hourAhead.getTime() / MINUTE) * MINUTE).toISOString());

      // As if no server were up for 35 minutes: the ten-minute schedule missed three or four times.
      clock.advance(35 * MINUTE);
      const missed = new Date(Math.floor(clock.now().getTime() / (10 * MINUTE)) * 10 * MINUTE).toISOString();
      const executed = await executedEvents(app(), caller.key, 2);
      await schedulerPassed(app());
      const again = await allEvents(app(), caller.key, 'schedule.executed');
      expect(again).toHaveLength(2);
      const byName = Object.fromEntries(executed.map((event) => [event.data.schedule.name, event.data]));
      expect(byName['Every ten']).toMatchObject({ scheduledFor: missed, outcome: 'succeeded' });
      expect(byName.Once).toMatchObject({ scheduledFor: oneShot.at, outcome: 'succeeded' });
      expect((await getSchedule(caller.key, everyTen.id)).json.nextRunAt).toBe(new Date(Date.parse(missed) + 10 * MINUTE).toISOString());

      // Now down for two hours: the daily run (about 95 minutes late) and every ten-minute time
      // more than an hour ago are skipped; the latest ten-minute time is under an hour late and runs.
      const lateOneShot = await created(caller, { name: 'Late once', at: new Date(clock.now().getTime() + MINUTE).toISOString(), action });
      clock.advance(120 * MINUTE);
      const latest = new Date(Math.floor(clock.now().getTime() / (10 * MINUTE)) * 10 * MINUTE).toISOString();
      const later = await executedEvents(app(), caller.key, 3);
      await schedulerPassed(app());
      await schedulerPassed(app());
      const final = await allEvents(app(), caller.key, 'schedule.executed');
      expect(final).toHaveLength(3);
      expect(later[2]?.data).toMatchObject({ schedule: { name: 'Every ten' }, scheduledFor: latest });
      const dailyAfter = (await getSchedule(caller.key, daily.id)).json;
      expect(dailyAfter).toMatchObject({ enabled: true, lastRunAt: null, nextRunAt: new Date(Date.parse(daily.nextRunAt) + 86_400_000).toISOString() });
      const skippedOnce = (await getSchedule(caller.key, lateOneShot.id)).json;
      expect(skippedOnce).toMatchObject({ enabled: false, nextRunAt: null, lastRunAt: null });
      for (const schedule of [everyTen, daily, oneShot, lateOneShot])
        await app().request({ method: 'DELETE', url: `/api/v1/schedules/${schedule.id}`, key: caller.key });
    });

    it('runs nothing for a disabled schedule', async () => {
      const caller = await app().account();
      const schedule = await created(caller, {
        name: 'Off',
        cron: '* * * * *',
        enabled: false,
        action: { type: 'publish_event', eventType: 'custom.off', data: {} },
      });
      expect(schedule.nextRunAt).toBeNull();
      clock.advance(3 * MINUTE);
      await schedulerPassed(app());
      expect(await allEvents(app(), caller.key)).toEqual([]);
      await app().request({ method: 'DELETE', url: `/api/v1/schedules/${schedule.id}`, key: caller.key });
    });
  });

  describe('discovery', () => {
    it('lists schedules in the capabilities document and every route in /openapi.json', async () => {
      const capabilities = await app().request({ url: '/api/v1/capabilities' });
      expect(capabilities.json.features.schedules).toMatchObject({ actions: ['set_state', 'publish_event'], missedRunGraceMinutes: 60 });
      expect(capabilities.json.eventTypes).toContain('schedule.executed');
      expect(capabilities.json.scopes).toContain('schedules:manage');
      const document = (await app().request({ url: '/openapi.json' })).json;
      expect(Object.keys(document.paths['/api/v1/schedules']).sort()).toEqual(['get', 'head', 'post']);
      expect(Object.keys(document.paths['/api/v1/schedules/{id}']).sort()).toEqual(['delete', 'get', 'head', 'patch']);
      expect(Object.keys(document.paths['/api/v1/schedules/{id}/run'])).toEqual(['post']);
      expect(document.components.schemas.Schedule).toBeDefined();
      expect(document.components.schemas.ScheduleExecution).toBeDefined();
    });
  });
});
