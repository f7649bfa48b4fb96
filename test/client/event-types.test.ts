// The generated event types narrow on `type` (issue 37): a built-in type selects its own `data`,
// and a custom event's type (`custom.${string}`, from the document's pattern) is never a built-in
// one. tsc checks the types (npm run typecheck); the test runs the same code on real events.
import type { CustomEvent, DevdataEvent, ResourceUpdatedEvent, ScheduleExecutedEvent } from '@devdata/client';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { useTestApp } from '../support/app.js';

/** What a client writes: no cast, each branch reads its own event's data. */
function summary(event: DevdataEvent): string {
  if (event.type === 'resource.updated') return `${event.data.resource.name} changed ${event.data.changed.join(', ')}`;
  if (event.type === 'resource.created' || event.type === 'resource.deleted') return `${event.type} ${event.data.resource.id}`;
  if (event.type === 'schedule.executed') return `${event.data.schedule.name} ${event.data.outcome}`;
  return `${event.type} ${Object.keys(event.data).join(', ')}`;
}

describe('the generated event union', () => {
  const app = useTestApp();

  it('narrows to one event type by `type`', () => {
    expectTypeOf<Extract<DevdataEvent, { type: 'resource.updated' }>>().toEqualTypeOf<ResourceUpdatedEvent>();
    expectTypeOf<Extract<DevdataEvent, { type: 'schedule.executed' }>>().toEqualTypeOf<ScheduleExecutedEvent>();
    expectTypeOf<Extract<DevdataEvent, { type: `custom.${string}` }>>().toEqualTypeOf<CustomEvent>();
    expectTypeOf<CustomEvent['type']>().toEqualTypeOf<`custom.${string}`>();
    // @ts-expect-error a custom event's type cannot be a built-in one, so it never joins their branch
    const builtIn: CustomEvent['type'] = 'resource.updated';
    expect(builtIn).toBe('resource.updated');
  });

  it('reads real events through the narrowed types', async () => {
    const account = await app().account();
    const post = (url: string, body: unknown) => app().request({ method: 'POST', url, key: account.key, body });
    const created = await post('/api/v1/resources', { name: 'Lamp', type: 'switch', state: false });
    await app().request({ method: 'PATCH', url: `/api/v1/resources/${created.json.id}`, key: account.key, body: { state: true } });
    await post('/api/v1/events', { type: 'custom.deployed', data: { version: '1.2' } });
    const page = await app().request({ url: '/api/v1/events', key: account.key });
    expect((page.json.data as DevdataEvent[]).map(summary)).toEqual([`resource.created ${created.json.id}`, 'Lamp changed state', 'custom.deployed version']);
  });
});
