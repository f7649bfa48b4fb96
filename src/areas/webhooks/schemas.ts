// The API's shapes of webhooks and their deliveries: the schemas the routes validate and document
// with, and the types the service and the store work with, derived from them.
import { Type, type Static } from 'typebox';
import { DisabledReason, DisplayName, Timestamp } from '../../platform/schemas.js';
import { EVENT_TYPES } from '../events/event.js';

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
});
const DeliverySchema = Type.Object(
  {
    id: Type.String(),
    eventId: Type.Integer(),
    eventType: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
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

export const webhookSchemas = [WebhookSchema, WebhookWithSecretSchema, DeliverySchema];

export type Webhook = Static<typeof WebhookSchema>;
export type WebhookWithSecret = Static<typeof WebhookWithSecretSchema>;
export type Attempt = Static<typeof AttemptSchema>;
export type Delivery = Static<typeof DeliverySchema>;
export type CreateWebhook = Static<typeof CreateWebhookBody>;
export type WebhookChanges = Static<typeof UpdateWebhookBody>;
