import type { Migration } from 'kysely';
import * as foundation from './0001_foundation.js';
import * as resourcesEvents from './0002_resources_events.js';
import * as rateLimits from './0003_rate_limits.js';
import * as webhooks from './0004_webhooks.js';
import * as oauth from './0005_oauth.js';
import * as developerSessions from './0006_developer_sessions.js';
import * as schedules from './0007_schedules.js';
import * as connectionExpiry from './0008_connection_expiry.js';
import * as creationOrder from './0009_creation_order.js';
import * as resourceCounts from './0010_resource_counts.js';
import * as accountWebhookCount from './0011_account_webhook_count.js';
import * as standingAuthority from './0012_standing_authority.js';
import * as idempotentRequests from './0013_idempotent_requests.js';
import * as history from './0014_history.js';
import * as historyStaged from './0015_history_staged.js';
import * as webhookTools from './0016_webhook_tools.js';

// Listed explicitly (not read from disk) so the same list works from src/ under vitest and dist/.
export const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_resources_events': resourcesEvents,
  '0003_rate_limits': rateLimits,
  '0004_webhooks': webhooks,
  '0005_oauth': oauth,
  '0006_developer_sessions': developerSessions,
  '0007_schedules': schedules,
  '0008_connection_expiry': connectionExpiry,
  '0009_creation_order': creationOrder,
  '0010_resource_counts': resourceCounts,
  '0011_account_webhook_count': accountWebhookCount,
  '0012_standing_authority': standingAuthority,
  '0013_idempotent_requests': idempotentRequests,
  '0014_history': history,
  '0015_history_staged': historyStaged,
  '0016_webhook_tools': webhookTools,
};
