import type { Event } from './service.js';

const built = new WeakMap<Event, string>();

/**
 * The API JSON of a committed event (`id`, `type`, `data`, `createdAt`), built once per event
 * however many readers send it: the in-memory recent events and every open stream.
 */
export function eventJson(event: Event): string {
  let json = built.get(event);
  if (json === undefined) {
    json = JSON.stringify({ id: event.id, type: event.type, data: event.data, createdAt: event.createdAt });
    built.set(event, json);
  }
  return json;
}
