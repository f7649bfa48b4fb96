// The area services the house is made of, built by context.ts; routes and reactions reach each
// other through them (an area uses another through its service).
import type { AccountsService } from './areas/accounts/service.js';
import type { AuditService } from './areas/audit/service.js';
import type { KeysService } from './areas/keys/service.js';
import type { SystemService } from './areas/system/service.js';
import type { UsageService } from './areas/usage/service.js';
import type { EventsService } from './areas/events/service.js';
import type { EventReads } from './areas/events/read-side.js';
import type { ResourcesService } from './areas/resources/service.js';
import type { ResourceReads } from './areas/resources/read-side.js';
import type { BatchService } from './areas/batch/service.js';
import type { HistoryService } from './areas/history/service.js';
import type { HistoryHousekeeping } from './areas/history/housekeeping.js';
import type { StagedPoints } from './areas/history/staged.js';
import type { WebhooksService } from './areas/webhooks/service.js';
import type { AppsService } from './areas/apps/service.js';
import type { DeveloperService } from './areas/developer/service.js';
import type { SchedulesService } from './areas/schedules/service.js';
import type { InstallationsService } from './areas/installations/service.js';
import type { OAuthService } from './areas/oauth/service.js';
import type { Authorizer } from './platform/credential.js';
import type { StandingAuthority } from './standing-authority.js';

export interface Services {
  accounts: AccountsService;
  audit: AuditService;
  keys: KeysService;
  usage: UsageService;
  system: SystemService;
  events: EventsService;
  /** The event log's pages, reads and cursor rules. */
  eventReads: EventReads;
  resources: ResourcesService;
  /** The resources served as prepared JSON, and snapshots. */
  resourceReads: ResourceReads;
  /** Many writes in one request, all or nothing. */
  batches: BatchService;
  /** Every state a resource took: points, buckets, backfill. */
  history: HistoryService;
  /** The history's aggregates built and what expired removed, in small steps. */
  historyHousekeeping: HistoryHousekeeping;
  /** The points of live writes, moved from where they are staged into their series. */
  historyStaged: StagedPoints;
  webhooks: WebhooksService;
  apps: AppsService;
  oauth: OAuthService;
  developer: DeveloperService;
  schedules: SchedulesService;
  installations: InstallationsService;
  /** Which of these credentials (API keys, OAuth connections, OAuth apps) are still live. */
  liveCredentials: (authorizers: Authorizer[]) => Promise<Set<string>>;
  /** Every kind of object that acts later on an account's behalf, and their cut-off. */
  authority: StandingAuthority;
}
