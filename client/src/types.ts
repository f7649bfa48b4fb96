// Names for the schemas of the OpenAPI document (generated into ./generated/openapi.ts).
import type { components, operations, paths } from './generated/openapi.js';

type Schemas = components['schemas'];

export type { components, operations, paths };
export type ApiErrorBody = Schemas['Error'];
export type Resource = Schemas['Resource'];
export type ResourceList = Schemas['ResourceList'];
export type ResourceType = Resource['type'];
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
export type App = Schemas['App'];
export type AppWithSecret = Schemas['AppWithSecret'];
export type Schedule = Schemas['Schedule'];
export type ScheduleAction = Schemas['ScheduleAction'];
export type AuditRecord = Schemas['AuditRecord'];
export type AuditPage = Schemas['AuditPage'];
export type Installation = Schemas['Installation'];
export type TokenResponse = Schemas['TokenResponse'];
export type AuthorizationServerMetadata = Schemas['AuthorizationServerMetadata'];
