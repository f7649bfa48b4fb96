// What a webhook subscribes to: the event types it lists (exact, or custom.* for every custom
// event), checked when it is set, and matched against each event.
import { invalidField } from '../../domain-errors.js';
import { CUSTOM_EVENT_TYPE, EVENT_TYPES } from '../events/event.js';

export function matches(filters: readonly string[], type: string): boolean {
  return filters.includes(type) || (type.startsWith('custom.') && filters.includes('custom.*'));
}

export function validateEvents(events: string[]): void {
  if (events.length === 0) throw invalidField('/events', 'must list at least one event type');
  events.forEach((type, index) => {
    if (!(EVENT_TYPES as readonly string[]).includes(type) && !CUSTOM_EVENT_TYPE.test(type)) {
      throw invalidField(`/events/${index}`, `"${type}" is not an event type (use ${EVENT_TYPES.join(', ')} or custom.<name>)`);
    }
  });
}
