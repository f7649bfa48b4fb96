// Table shapes as Kysely sees them. JSON values are stored as text and timestamps as ISO 8601
// UTC strings (millisecond precision), so both backends store and compare them the same way.
import type { Generated, Kysely, Transaction } from 'kysely';

export interface AccountsTable {
  id: string;
  name: string;
  email: string | null;
  created_at: string;
  /** Last event id handed out; the per-account counter row that orders events (docs/decisions.md: "Events and streams"). */
  event_seq: Generated<number>;
  /** Last audit position handed out, the audit log's cursor. */
  audit_seq: Generated<number>;
  /** How many webhooks the account has (kept by areas/webhooks/store.ts), read with the event counter. */
  webhook_count: Generated<number>;
  /** operator (CLI) or signup. */
  origin: Generated<string>;
}

export interface DeveloperSessionsTable {
  token_hash: string;
  account_id: string;
  created_at: string;
  expires_at: string;
  ended_at: string | null;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  /** Position among the account's rows of this table, in creation order (set on insert). */
  created_seq: number | null;
  name: string;
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  key_hash: string;
  /** JSON array of scope names. */
  scopes: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

export interface AuditLogTable {
  id: string;
  account_id: string;
  seq: number;
  type: string;
  /** JSON object. */
  actor: string;
  /** JSON object or null. */
  target: string | null;
  /** JSON object. */
  data: string;
  created_at: string;
}

export interface UsageDailyTable {
  account_id: string;
  /** YYYY-MM-DD, UTC. */
  day: string;
  requests: number;
  errors: number;
  events_created: number;
  webhook_deliveries: number;
}

export interface ResourcesTable {
  id: string;
  account_id: string;
  name: string;
  type: string;
  /** JSON value: number, string or boolean. */
  state: string;
  /** JSON object. */
  attributes: string;
  /** JSON array of strings (also one row each in resource_tags, for filtering). */
  tags: string;
  version: number;
  /** The id of the resource.created event, for ordering by creation. */
  created_seq: number;
  created_at: string;
  updated_at: string;
}

export interface ResourceTagsTable {
  resource_id: string;
  account_id: string;
  tag: string;
  /** The resource's created_seq, so that a tag's resources are one index range in creation order (migration 0010). */
  created_seq: number | null;
}

/** Resources per account (kind ''), per type ('type') and per tag ('tag'), kept as they change. */
export interface ResourceCountsTable {
  account_id: string;
  kind: '' | 'type' | 'tag';
  /** The type or the tag; '' for the whole account. */
  name: string;
  count: number;
}

export interface EventsTable {
  account_id: string;
  /** Position in the account's sequence: 1, 2, 3… */
  id: number;
  type: string;
  /** JSON object. */
  data: string;
  created_at: string;
}

export interface RateLimitWindowsTable {
  key: string;
  /** Start of the one-minute window, epoch milliseconds. */
  window_start: number;
  count: number;
}

export interface WebhooksTable {
  id: string;
  account_id: string;
  /** Position among the account's rows of this table, in creation order (set on insert). */
  created_seq: number | null;
  name: string;
  url: string;
  /** JSON array of event types or `custom.*`. */
  events: string;
  /** 0 or 1. */
  enabled: number;
  disabled_reason: string | null;
  /** The signing secret, encrypted (`enc:v1:…`) when SECRETS_KEY is set, else `plain:…`. */
  secret: string;
  authorized_by_kind: string;
  authorized_by_id: string;
  pending_count: Generated<number>;
  gap_from: number | null;
  gap_to: number | null;
  gap_dropped: Generated<number>;
  /** The first failed attempt since the last success; null while deliveries succeed. */
  failing_since: string | null;
  /** Before this time its receiver asked for no requests (a 429 or 503 with Retry-After). */
  held_until: string | null;
  /** Deliveries that ended failed since `failing_since`. */
  failed_deliveries: Generated<number>;
  created_at: string;
  updated_at: string;
}

export interface WebhookDeliveriesTable {
  id: string;
  webhook_id: string;
  account_id: string;
  event_id: number;
  event_type: string;
  payload: string;
  /** `from-to` of the events dropped just before this one, for X-Service-Event-Gap. */
  gap: string | null;
  status: string;
  /** JSON array of attempts. */
  attempts: string;
  next_attempt_at: string | null;
  claimed_until: string | null;
  /** `event`, `test` or `replay` (migration 0016). */
  origin: Generated<string>;
  created_at: string;
  completed_at: string | null;
}

export interface ServiceSettingsTable {
  name: string;
  value: string;
}

export interface AppsTable {
  id: string;
  account_id: string;
  /** Position among the account's rows of this table, in creation order (set on insert). */
  created_seq: number | null;
  client_id: string;
  name: string;
  type: string;
  /** JSON array. */
  redirect_uris: string;
  /** JSON array. */
  scopes: string;
  client_secret_hash: string | null;
  /** The API key that registered the app or last changed its scopes: its client credentials end with it. */
  authorized_by_key_id: string | null;
  /** Set (`credential_revoked`, `credential_expired`) when that key ended; cleared when a live key re-authorizes. */
  client_credentials_ended: string | null;
  created_at: string;
  updated_at: string;
}

export interface OAuthConnectionsTable {
  id: string;
  account_id: string;
  app_id: string;
  approving_key_id: string;
  scopes: string;
  created_at: string;
  expires_at: string;
  ended_at: string | null;
  ended_reason: string | null;
}

export interface OAuthCodesTable {
  code_hash: string;
  connection_id: string;
  redirect_uri: string;
  code_challenge: string;
  expires_at: string;
  used_at: string | null;
}

export interface OAuthTokensTable {
  token_hash: string;
  id: string;
  /** access or refresh */
  kind: string;
  app_id: string;
  account_id: string;
  /** Null for client-credentials tokens, which act for the app's owner. */
  connection_id: string | null;
  scopes: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  /** Refresh tokens: when it was exchanged for a new one (a later use is reuse). */
  rotated_at: string | null;
}

export interface SchedulesTable {
  id: string;
  account_id: string;
  /** Position among the account's rows of this table, in creation order (set on insert). */
  created_seq: number | null;
  name: string;
  cron: string | null;
  at: string | null;
  timezone: string;
  /** JSON object. */
  action: string;
  /** 0 or 1. */
  enabled: number;
  /** Why the service disabled it (`credential_revoked`, `credential_expired`), or null. */
  disabled_reason: string | null;
  /** The credential it acts on the authority of: `api_key`, `oauth_connection` or `oauth_app`, and its id. */
  authorized_by_kind: string;
  authorized_by_id: string;
  next_run_at: string | null;
  last_run_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A request's outcome under its Idempotency-Key (idempotency/store.ts). */
export interface IdempotentRequestsTable {
  /** The account's id, or `ip:<address>` for a request before there is an account (signup). */
  scope: string;
  key: string;
  /** SHA-256 of the method, the path and the body: what makes a request the same one. */
  fingerprint: string;
  status: number;
  /** The response headers a replay repeats, as a JSON object. */
  headers: string;
  /** The response body, sealed (secret-box.ts) when `sealed` is 1. */
  body: string;
  sealed: number;
  created_at: string;
}

/** A resource with history (areas/history): its compact key, and how far its hourly aggregates are built. */
export interface HistorySeriesTable {
  key: Generated<number>;
  resource_id: string;
  account_id: string;
  /** Epoch ms of an hour's start: every hour before it is in history_hours (or history_stale). */
  rolled_until: number;
  /** 1 once its resource was deleted: its points and aggregates are being removed. */
  retired: number;
}

/** One state of a resource, at `at` (epoch ms): a number or boolean (1/0) in `value`, a string in `text`. */
export interface HistoryPointsTable {
  series: number;
  at: number;
  value: number | null;
  text: string | null;
}

/** Points of live writes not yet moved into history_points (migration 0015); SQLite orders them by rowid. */
export interface HistoryStagedTable {
  resource_id: string;
  at: number;
  value: number | null;
  text: string | null;
}

/** The points of one series in one hour, summed up; `true_ms` counts from the hour's first point to its end. */
export interface HistoryHoursTable {
  series: number;
  hour: number;
  count: number;
  numeric_count: number;
  min: number | null;
  max: number | null;
  sum: number | null;
  first_at: number;
  last_at: number;
  last_value: number | null;
  last_text: string | null;
  true_ms: number;
}

/** An hour whose aggregate a backfill made out of date. */
export interface HistoryStaleTable {
  series: number;
  hour: number;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  audit_log: AuditLogTable;
  usage_daily: UsageDailyTable;
  resources: ResourcesTable;
  resource_tags: ResourceTagsTable;
  resource_counts: ResourceCountsTable;
  events: EventsTable;
  rate_limit_windows: RateLimitWindowsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  service_settings: ServiceSettingsTable;
  apps: AppsTable;
  oauth_connections: OAuthConnectionsTable;
  oauth_codes: OAuthCodesTable;
  oauth_tokens: OAuthTokensTable;
  developer_sessions: DeveloperSessionsTable;
  schedules: SchedulesTable;
  idempotent_requests: IdempotentRequestsTable;
  history_series: HistorySeriesTable;
  history_points: HistoryPointsTable;
  history_staged: HistoryStagedTable;
  history_hours: HistoryHoursTable;
  history_stale: HistoryStaleTable;
}

/** A database handle or an open transaction: stores accept either, so services decide the unit of work. */
export type Executor = Kysely<Database> | Transaction<Database>;
