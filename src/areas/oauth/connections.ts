// OAuth connections (an account's approval of an app) end: revoked, expired, with the key that
// approved them, or with their app. Ending one emits `credentials.ended`, so what it authorized stops.
import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import { inTransaction } from '../../storage/transaction.js';
import type { Clock } from '../../platform/clock.js';
import type { DomainEvents } from '../../domain-events.js';
import type { AppRow } from '../apps/service.js';
import type { AuditService } from '../audit/service.js';
import type { KeysService } from '../keys/service.js';
import { endConnection, expiredOpenConnections, liveConnections, openConnectionsOf, revokeAppTokens } from './store.js';

export class OAuthConnections {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly keys: KeysService,
    private readonly audit: AuditService,
    private readonly domain: DomainEvents,
  ) {}

  /** Ends the connections a revoked key approved. */
  async endApprovedBy(exec: Executor, keyId: string): Promise<void> {
    await this.end(exec, await openConnectionsOf(exec, { approvingKeyId: keyId }), 'approving_key_revoked');
  }

  async end(exec: Executor, connections: Array<{ id: string; accountId: string }>, reason: string): Promise<void> {
    const nowIso = this.clock.now().toISOString();
    const ended: string[] = [];
    for (const connection of connections) {
      if (!(await endConnection(exec, connection.id, reason, nowIso))) continue;
      ended.push(connection.id);
      await this.audit.record(exec, {
        accountId: connection.accountId,
        type: 'oauth.connection_ended',
        actor: { kind: 'system' },
        target: { type: 'oauth_connection', id: connection.id },
        data: { reason },
      });
    }
    const how = reason === 'expired' || reason === 'approving_key_expired' ? 'expired' : 'revoked';
    if (ended.length > 0) await this.domain.emit(exec, 'credentials.ended', { ids: ended, how });
  }

  /**
   * Records the end of connections that ran out (30 days, or the approving key's expiry): their
   * tokens already stopped at that moment; this writes the audit record and stops what they
   * authorized. Run periodically.
   */
  async endExpired(): Promise<void> {
    await inTransaction(this.db, async (trx) => this.end(trx, await expiredOpenConnections(trx, this.clock.now().toISOString()), 'expired'));
  }

  /** Ends an app's connections and tokens (before the app is deleted). */
  async endAppGrants(exec: Executor, app: AppRow): Promise<void> {
    await this.end(exec, await openConnectionsOf(exec, { appId: app.id }), 'app_deleted');
    await revokeAppTokens(exec, app.id, this.clock.now().toISOString());
    await this.domain.emit(exec, 'credentials.ended', { ids: [app.id], how: 'revoked' });
  }

  /** Which of these connections are open, unexpired, and approved by a still usable key. */
  async liveConnectionIds(ids: string[]): Promise<Set<string>> {
    const live = await liveConnections(this.db, ids, this.clock.now().toISOString());
    const usableKeys = await this.keys.usableIds([...new Set(live.map((connection) => connection.approvingKeyId))]);
    return new Set(live.filter((connection) => usableKeys.has(connection.approvingKeyId)).map((connection) => connection.id));
  }
}
