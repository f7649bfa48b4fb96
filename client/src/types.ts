// Names for the schemas of the OpenAPI document (generated into ./generated/openapi.ts).
import type { components, operations, paths } from './generated/openapi.js';

type Schemas = components['schemas'];

export type { components, operations, paths };
export type ApiErrorBody = Schemas['Error'];
export type Resource = Schemas['Resource'];
export type ResourceList = Schemas['ResourceList'];
export type ResourceType = Resource['type'];
export type ResourceState = Resource['state'];
export type DevdataEvent = Schemas['Event'];
export type ResourceCreatedEvent = Schemas['ResourceCreatedEvent'];
export type ResourceUpdatedEvent = Schemas['ResourceUpdatedEvent'];
export type ResourceDeletedEvent = Schemas['ResourceDeletedEvent'];
export type ScheduleExecutedEvent = Schemas['ScheduleExecutedEvent'];
export type CustomEvent = Schemas['CustomEvent'];
export type EventPage = Schemas['EventPage'];
export type CredentialSummary = Schemas['CredentialSummary'];
export type ApiKey = Schemas['ApiKey'];
export type CreatedApiKey = Schemas['CreatedApiKey'];
export type Webhook = Schemas['Webhook'];
export type WebhookWithSecret = Schemas['WebhookWithSecret'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type WebhookDeliveryStatus = WebhookDelivery['status'];
/** One attempt of a delivery: the headers sent (by lower-case name) and the start of the answer. */
export type WebhookDeliveryAttempt = WebhookDelivery['attempts'][number];
export type WebhookDeliveryPage = Schemas['WebhookDeliveryPage'];
export type WebhookTestDelivery = Schemas['WebhookTestDelivery'];
export type WebhookReplay = Schemas['WebhookReplay'];
export type WebhookRecover = Schemas['WebhookRecover'];

/**
 * The body of a test delivery (`POST /api/v1/webhooks/{id}/test`), with `X-Service-Event-Id: 0`:
 * not an event of the log, so a receiver acknowledges it and does nothing else.
 */
export interface WebhookTestEvent {
  id: 0;
  type: 'webhook.test';
  data: { webhookId: string };
  createdAt: string;
}

/** What a delivery's body holds: an event of the log, or a test delivery's. */
export type WebhookPayload = DevdataEvent | WebhookTestEvent;
export type App = Schemas['App'];
export type AppWithSecret = Schemas['AppWithSecret'];
export type Schedule = Schemas['Schedule'];
export type ScheduleAction = Schemas['ScheduleAction'];
export type AuditRecord = Schemas['AuditRecord'];
export type AuditPage = Schemas['AuditPage'];
export type Installation = Schemas['Installation'];
export type TokenResponse = Schemas['TokenResponse'];
export type AuthorizationServerMetadata = Schemas['AuthorizationServerMetadata'];
export type BatchOperation = Schemas['BatchOperation'];
export type BatchCreate = Schemas['BatchCreate'];
export type BatchUpdate = Schemas['BatchUpdate'];
export type BatchDelete = Schemas['BatchDelete'];
export type BatchPublish = Schemas['BatchPublish'];
export type BatchResult = Schemas['BatchResult'];
export type BatchResponse = Schemas['BatchResponse'];
export type HistoryPoint = Schemas['HistoryPoint'];
export type HistoryPage = Schemas['HistoryPage'];
export type HistoryBucket = Schemas['HistoryBucket'];
export type HistoryBuckets = Schemas['HistoryBuckets'];
export type HistoryBucketLength = HistoryBuckets['bucket'];
export type HistoryBackfillResult = Schemas['HistoryBackfillResult'];
export type HistoryOfResource = Schemas['HistoryOfResource'];
export type HistoryOfResources = Schemas['HistoryOfResources'];
