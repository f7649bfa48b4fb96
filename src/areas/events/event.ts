// What an event is, defined once: its shape, its types, the custom type rule, the size of a
// published body and its API JSON. Every area that makes, stores, sends or checks events uses these.

export interface Event {
  id: number;
  type: string;
  data: Record<string, unknown>;
  createdAt: string;
}

export const RESOURCE_EVENT_TYPES = ['resource.created', 'resource.updated', 'resource.deleted'] as const;
/** Every type an event may have, `custom.*` standing for the custom ones; what webhooks subscribe to. */
export const EVENT_TYPES = [...RESOURCE_EVENT_TYPES, 'schedule.executed', 'custom.*'] as const;

/** A custom event's type: `custom.` and 1-100 of [A-Za-z0-9_.:-]. The source serves JSON Schema too. */
export const CUSTOM_EVENT_TYPE_PATTERN = '^custom\\.[A-Za-z0-9_.:-]{1,100}$';
export const CUSTOM_EVENT_TYPE = new RegExp(CUSTOM_EVENT_TYPE_PATTERN);
export const CUSTOM_EVENT_TYPE_RULE = '`custom.` followed by 1-100 of [A-Za-z0-9_.:-]';

/** The largest body of a published event, in bytes. */
export const EVENT_BODY_LIMIT = 64 * 1024;

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
