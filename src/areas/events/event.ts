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

/** Why a custom event's data cannot be published where no body limit bounds it (a schedule's action, a batch's operation), or undefined. */
export function customDataProblem(data: Record<string, unknown>): string | undefined {
  return Buffer.byteLength(JSON.stringify(data)) > EVENT_BODY_LIMIT ? `must be at most ${EVENT_BODY_LIMIT} bytes as JSON, like a published event` : undefined;
}

const dataTexts = new WeakMap<Event, string>();
const built = new WeakMap<Event, string>();

/** An event's `data` as JSON text, made once per event: what its row stores. */
export function eventDataJson(event: Event): string {
  let text = dataTexts.get(event);
  if (text === undefined) {
    text = JSON.stringify(event.data);
    dataTexts.set(event, text);
  }
  return text;
}

/**
 * The API JSON of an event from its parts, laid out as JSON.stringify lays out the Event: the one
 * place its bytes are arranged, for committed events and for rows read back with their stored data.
 */
export function eventJsonOf(id: number, type: string, dataJson: string, createdAt: string): string {
  return `{"id":${id},"type":${JSON.stringify(type)},"data":${dataJson},"createdAt":${JSON.stringify(createdAt)}}`;
}

/**
 * The API JSON of a committed event, built once per event from the text its row stores, however
 * many readers send it: the publish response, the in-memory recent events, every open stream and
 * each webhook delivery.
 */
export function eventJson(event: Event): string {
  let json = built.get(event);
  if (json === undefined) {
    json = eventJsonOf(event.id, event.type, eventDataJson(event), event.createdAt);
    built.set(event, json);
  }
  return json;
}

/** The oldest cursor still served when the newest event is `newest`: fixed by the retention rule (EVENT_RETENTION), not by when rows are deleted. */
export function oldestRetainedCursor(newest: number, retention: number): number {
  return Math.max(0, newest - retention);
}
