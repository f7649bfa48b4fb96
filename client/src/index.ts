// @devdata/client: a typed client of the devdata API, batches and the rows of import files, webhook
// verification (X-Service-Signature and Standard Webhooks) and OAuth helpers.
export { DevdataClient, ifMatch, type DevdataClientOptions, type EventQuery, type ResourceQuery } from './client.js';
export { DevdataError, type ErrorDetail } from './errors.js';
export type { CallOptions, OperationInput } from './operation-types.js';
export { EventStream, type EventStreamOptions } from './stream.js';
export { parseSse, type SseMessage } from './sse.js';
export { newIdempotencyKey, type Credential, type RetryOptions } from './transport.js';
export * from './types.js';
export {
  APP_TYPES,
  BATCH_MAX_OPERATIONS,
  EVENT_TYPES,
  HISTORY_BUCKETS,
  HISTORY_MAX_BACKFILL_POINTS,
  HISTORY_MAX_PAGE_POINTS,
  IDEMPOTENCY_KEPT_HOURS,
  OAUTH_SCOPES,
  RESOURCE_TYPES,
  SCOPES,
} from './generated/values.js';
export { BatchFailure, type BatchAllOptions, type BatchProgress, type BatchResponseOf, type BatchResultOf } from './batch.js';
export {
  HistoryBackfillFailure,
  type HistoryBackfillAllOptions,
  type HistoryBackfillProgress,
  type HistoryBucketQuery,
  type HistoryBucketsOf,
  type HistoryPointInput,
  type HistoryPointsOf,
  type HistoryQuery,
  type HistoryRange,
  type HistoryTime,
} from './history.js';
export {
  batchesOf,
  CSV_COLUMNS,
  csvHeader,
  exportLine,
  importFormatOf,
  parseImportRows,
  stateFromText,
  type ExportOptions,
  type ImportFormat,
  type ImportRow,
  type ImportRowError,
} from './import-rows.js';
export { csvLine } from './csv.js';
export { DELIVERY_PAGE_SIZE, type WebhookDeliveryQuery, type WebhookReplayRange } from './deliveries.js';
export { describeScheduleAction, formatState, scheduleRanOnce, scheduleStatus, webhookStatus } from './display.js';
export {
  DEFAULT_TOLERANCE_SECONDS,
  SIGNATURE_HEADER,
  signWebhook,
  verifyWebhook,
  WebhookVerificationError,
  type VerifyWebhookOptions,
  type WebhookVerificationErrorCode,
} from './webhooks.js';
export { signStandardWebhook, STANDARD_WEBHOOK_HEADERS, verifyStandardWebhook, type WebhookHeaders } from './standard-webhooks.js';
export { DevdataOAuth, type OAuthAppOptions, type PendingAuthorization, type TokenSet } from './oauth.js';
