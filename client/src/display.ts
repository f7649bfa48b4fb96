// The words people read for a state or a status, shared by the web console and the CLI so that
// both say the same thing (docs/decisions.md, "Client library and developer CLI").
import type { Schedule, ScheduleAction, Webhook } from './types.js';

/** A resource state as text: "on"/"off" for a boolean (a switch, a binary sensor), the value otherwise. */
export function formatState(state: unknown): string {
  if (state === true) return 'on';
  if (state === false) return 'off';
  return String(state);
}

/** Why the service stopped a webhook or a schedule: its credential was revoked or expired. */
function stoppedBy(reason: string): string {
  return `stopped by the service: ${reason.replace('_', ' ')}`;
}

/** "active", "paused" by the user, or stopped by the service (enabling it again resumes it). */
export function webhookStatus(webhook: Pick<Webhook, 'enabled' | 'disabledReason'>): string {
  if (webhook.disabledReason) return stoppedBy(webhook.disabledReason);
  return webhook.enabled ? 'active' : 'paused';
}

/** A one-shot schedule whose time came and that ran then (it disabled itself): done, not paused. */
export function scheduleRanOnce(schedule: Pick<Schedule, 'at' | 'enabled' | 'disabledReason' | 'lastRunAt'>): boolean {
  return schedule.at !== null && !schedule.enabled && schedule.disabledReason === null && schedule.lastRunAt !== null && schedule.lastRunAt >= schedule.at;
}

/** "enabled", "paused" by the user, "done" (a one-shot that ran), or stopped by the service (enabling it again resumes it). */
export function scheduleStatus(schedule: Pick<Schedule, 'at' | 'enabled' | 'disabledReason' | 'lastRunAt'>): string {
  if (schedule.disabledReason) return stoppedBy(schedule.disabledReason);
  if (scheduleRanOnce(schedule)) return 'done';
  return schedule.enabled ? 'enabled' : 'paused';
}

/** What a schedule does: "set res_… to on", "publish custom.backup". */
export function describeScheduleAction(action: ScheduleAction): string {
  return action.type === 'set_state' ? `set ${action.resourceId} to ${formatState(action.state)}` : `publish ${action.eventType}`;
}
