import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import { nextAuditSequence } from '../../storage/sequences.js';
import type { Clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { insertAudit, listAudit, type AuditQuery, type AuditRow } from './store.js';

export { AUDIT_ORDERS } from './store.js';
import type { Credential } from '../../platform/credential.js';

export const AUDIT_TYPES = [
  'account.created',
  'developer.signup',
  'key.created',
  'key.revoked',
  'key.updated',
  'app.created',
  'app.updated',
  'app.deleted',
  'app.secret_rotated',
  'app.client_credentials_ended',
  'oauth.connection_approved',
  'oauth.connection_ended',
  'oauth.refresh_token_reused',
  'webhook.created',
  'webhook.updated',
  'webhook.deleted',
  'webhook.secret_rotated',
  'webhook.disabled',
  'webhook.deferred',
  'webhook.queue_full',
  'webhook.queue_resumed',
  'webhook.event_gap',
  'schedule.created',
  'schedule.updated',
  'schedule.deleted',
  'schedule.disabled',
] as const;

export type AuditType = (typeof AUDIT_TYPES)[number];

/** Who did it: a credential, the operator's CLI, a developer session, or the service itself. */
export type Actor =
  | { kind: 'api_key'; id: string }
  | { kind: 'oauth_access_token'; id: string; clientId: string }
  | { kind: 'developer_session'; accountId: string }
  | { kind: 'operator' }
  | { kind: 'system' };

/** Who acted, as the audit log records it: the API key, or the OAuth access token and its app. */
export function actorOf(credential: Credential): Actor {
  return credential.kind === 'api_key'
    ? { kind: 'api_key', id: credential.id }
    : { kind: 'oauth_access_token', id: credential.id, clientId: credential.clientId ?? '' };
}

export interface AuditEntry {
  accountId: string;
  type: AuditType;
  actor: Actor;
  target?: { type: string; id: string } | null;
  data?: Record<string, unknown>;
}

export interface AuditRecord {
  id: string;
  type: string;
  actor: Record<string, unknown>;
  target: Record<string, unknown> | null;
  data: Record<string, unknown>;
  createdAt: string;
}

export interface AuditPage {
  data: AuditRecord[];
  cursor: number;
  hasMore: boolean;
}

export class AuditService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
  ) {}

  /** What a caller did to one of its account's objects, recorded in the same transaction. */
  recordFor(exec: Executor, caller: Credential, type: AuditType, target: { type: string; id: string }, data?: Record<string, unknown>): Promise<void> {
    return this.record(exec, { accountId: caller.accountId, type, actor: actorOf(caller), target, ...(data !== undefined ? { data } : {}) });
  }

  /** Appends a record inside the caller's transaction, so the change and its audit commit together. */
  async record(exec: Executor, entry: AuditEntry): Promise<void> {
    const seq = await nextAuditSequence(exec, entry.accountId);
    await insertAudit(exec, {
      id: newId('aud'),
      accountId: entry.accountId,
      seq,
      type: entry.type,
      actor: entry.actor,
      target: entry.target ?? null,
      data: entry.data ?? {},
      createdAt: this.clock.now().toISOString(),
    });
  }

  /**
   * A page in `order`: `after` is where the previous page ended (its `cursor`), 0 to begin (at the
   * oldest record, or the newest in `desc`); `cursor` is the position of the last record returned
   * (or `after` when none), so the next page is always `after=<cursor>`.
   */
  async list(accountId: string, query: AuditQuery): Promise<AuditPage> {
    const rows = await listAudit(this.db, accountId, query);
    const page = rows.slice(0, query.limit);
    return {
      data: page.map(toRecord),
      cursor: page.at(-1)?.seq ?? query.after,
      hasMore: rows.length > query.limit,
    };
  }
}

function toRecord(row: AuditRow): AuditRecord {
  return { id: row.id, type: row.type, actor: row.actor, target: row.target, data: row.data, createdAt: row.createdAt };
}
