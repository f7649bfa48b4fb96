// The API's shapes of webhooks and their deliveries: the schemas the routes validate and document
// with, and the types the service and the store work with, derived from them.
import { Type, type Static } from 'typebox';
import { DisplayName, Timestamp, ref } from '../../platform/schemas.js';
import { CUT_OFF_REASONS } from '../../platform/credential.js';
import { EVENT_TYPES } from '../events/event.js';

/**
 * Why the service disabled a webhook: its authorizing credential ended (the queue was cleared), the
 * receiver answered 410 Gone, or no delivery succeeded for WEBHOOK_DISABLE_AFTER_HOURS.
 */
export const RECEIVER_DISABLED_REASONS = ['receiver_gone', 'failing'] as const;
export const WEBHOOK_DISABLED_REASONS = [...CUT_OFF_REASONS, ...RECEIVER_DISABLED_REASONS] as const;
export type WebhookDisabledReason = (typeof WEBHOOK_DISABLED_REASONS)[number];
/** Typed by hand: Static cannot read the literals' union out of a mapped array. */
const DisabledReason = Type.Unsafe<WebhookDisabledReason | null>(
  Type.Union([...WEBHOOK_DISABLED_REASONS.map((reason) => Type.Literal(reason)), Type.Null()], {
    description:
      'Why the service disabled it: the credential that authorized it was revoked or expired, the receiver answered 410 Gone ' +
      '(receiver_gone), or no delivery succeeded for WEBHOOK_DISABLE_AFTER_HOURS (failing); enable it again to resume. Null otherwise',
  }),
);

const DeliveryStatus = Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]);

const UrlField = Type.String({ minLength: 1, maxLength: 2048, description: 'https on port 443 to a public address' });
const EventsField = Type.Array(Type.String({ minLength: 1, maxLength: 120 }), {
  minItems: 1,
  maxItems: 50,
  description: `Event types to deliver: ${EVENT_TYPES.join(', ')}, or an exact custom.<name>`,
});

const webhookFields = {
  id: Type.String(),
  name: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  disabledReason: DisabledReason,
  failingSince: Type.Union([Timestamp, Type.Null()], {
    description: 'Since when no delivery has succeeded (its first failed attempt after the last success); null while deliveries succeed',
  }),
  heldUntil: Type.Union([Timestamp, Type.Null()], {
    description: 'Its receiver answered 429 or 503 with Retry-After: no delivery is attempted before this time (an hour at most); null otherwise',
  }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
};
const WebhookSchema = Type.Object(webhookFields, { $id: 'Webhook' });
const WebhookWithSecretSchema = Type.Object(
  { ...webhookFields, secret: Type.String({ description: 'The signing secret (whsec_…); shown only here' }) },
  { $id: 'WebhookWithSecret' },
);
const AttemptSchema = Type.Object({
  attempt: Type.Integer(),
  at: Timestamp,
  responseStatus: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  durationMs: Type.Integer(),
  requestHeaders: Type.Record(Type.String(), Type.String(), { description: 'The headers sent, by lower-case name, signatures included' }),
  responseBody: Type.Union([Type.String(), Type.Null()], {
    description: "The answer's first 1,024 bytes as UTF-8 (a character cut at the edge dropped); null when nothing was answered",
  }),
});
const DeliverySchema = Type.Object(
  {
    id: Type.String(),
    eventId: Type.Integer({ description: 'The event delivered; 0 for a test delivery' }),
    eventType: Type.String(),
    status: DeliveryStatus,
    test: Type.Boolean({ description: 'Sent by POST …/test: not an event of the log' }),
    replay: Type.Boolean({ description: 'Sent again by a replay or a recover (header X-Service-Replay: true)' }),
    attempts: Type.Array(AttemptSchema),
    createdAt: Timestamp,
    completedAt: Type.Union([Timestamp, Type.Null()]),
    nextAttemptAt: Type.Union([Timestamp, Type.Null()]),
  },
  { $id: 'WebhookDelivery' },
);

export const CreateWebhookBody = Type.Object(
  { name: DisplayName(), url: UrlField, events: EventsField, enabled: Type.Optional(Type.Boolean({ default: true })) },
  { additionalProperties: false },
);
export const UpdateWebhookBody = Type.Object(
  { name: Type.Optional(DisplayName()), url: Type.Optional(UrlField), events: Type.Optional(EventsField), enabled: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);

export const DeliveriesQuery = Type.Object(
  {
    status: Type.Optional(DeliveryStatus),
    eventId: Type.Optional(Type.Integer({ minimum: 0, description: 'Only the deliveries of this event (0: the test deliveries)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, description: 'At most this many (default: every kept delivery)' })),
    before: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'A delivery id: the page continues after it, older' })),
  },
  { additionalProperties: false },
);
export const ReplayBody = Type.Object(
  {
    after: Type.Integer({ minimum: 0, description: 'A cursor: the events after it are sent again' }),
    until: Type.Optional(Type.Integer({ minimum: 0, description: 'The last event sent again (default: the newest)' })),
  },
  { additionalProperties: false },
);
export const RecoverBody = Type.Object(
  { since: Type.String({ format: 'date-time', description: 'Deliveries that ended failed at or after this time are sent again' }) },
  { additionalProperties: false },
);
const TestDeliverySchema = Type.Object({ deliveryId: Type.String() }, { $id: 'WebhookTestDelivery' });
const ReplayResultSchema = Type.Object(
  {
    queued: Type.Integer({ description: 'New deliveries queued' }),
    skipped: Type.Integer({ description: 'Matching events left out: the queue holds at most 1,000 pending deliveries' }),
  },
  { $id: 'WebhookReplay' },
);
const RecoverResultSchema = Type.Object({ queued: Type.Integer({ description: 'New deliveries queued' }) }, { $id: 'WebhookRecover' });
const DeliveryPageSchema = Type.Object(
  { data: Type.Array(ref('WebhookDelivery'), { description: 'A page of `limit` deliveries may have more after it: ask again with before=<its last id>' }) },
  { $id: 'WebhookDeliveryPage' },
);

export const webhookSchemas = [
  WebhookSchema,
  WebhookWithSecretSchema,
  DeliverySchema,
  DeliveryPageSchema,
  TestDeliverySchema,
  ReplayResultSchema,
  RecoverResultSchema,
];

export type Webhook = Static<typeof WebhookSchema>;
export type WebhookWithSecret = Static<typeof WebhookWithSecretSchema>;
export type Attempt = Static<typeof AttemptSchema>;
export type Delivery = Static<typeof DeliverySchema>;
export type CreateWebhook = Static<typeof CreateWebhookBody>;
export type WebhookChanges = Static<typeof UpdateWebhookBody>;
export type DeliveryQuery = Static<typeof DeliveriesQuery>;
export type DeliveryPage = { data: Delivery[] };
export type ReplayRange = Static<typeof ReplayBody>;
export type ReplayResult = Static<typeof ReplayResultSchema>;
