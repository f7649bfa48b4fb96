// A confidential app's client credentials as standing authority (docs/decisions.md, "Standing
// authority"): they rest on the API key that registered the app or last changed its scopes or
// secret. When that key ends, the app's client-credentials tokens are revoked, the end is recorded
// on the app and audited, and what those tokens authorized stops with them (`credentials.ended`).
import type { Clock } from '../../platform/clock.js';
import type { Authorizer } from '../../platform/credential.js';
import type { DomainEvents } from '../../domain-events.js';
import type { CutOffReason, StandingObjects } from '../../standing-authority.js';
import type { Executor } from '../../storage/schema.js';
import { lockAccountRow } from '../../storage/sequences.js';
import type { AppsService } from '../apps/service.js';
import type { AuditService } from '../audit/service.js';
import { revokeClientCredentialTokens } from './store.js';

export class ClientCredentialsAuthority implements StandingObjects {
  constructor(
    private readonly clock: Clock,
    private readonly apps: AppsService,
    private readonly audit: AuditService,
    private readonly domain: DomainEvents,
  ) {}

  async cutOffAuthorizedBy(exec: Executor, keyIds: readonly string[], reason: CutOffReason): Promise<number> {
    const ended: string[] = [];
    for (const app of await this.apps.restingOnKeys(exec, keyIds)) {
      await lockAccountRow(exec, app.accountId);
      if (!(await this.apps.endClientCredentials(exec, app.id, reason))) continue;
      await revokeClientCredentialTokens(exec, app.id, this.clock.now().toISOString());
      await this.audit.record(exec, {
        accountId: app.accountId,
        type: 'app.client_credentials_ended',
        actor: { kind: 'system' },
        target: { type: 'app', id: app.id },
        data: { reason, key: app.authorizedByKeyId },
      });
      ended.push(app.id);
    }
    if (ended.length > 0) await this.domain.emit(exec, 'credentials.ended', { ids: ended, how: reason === 'credential_expired' ? 'expired' : 'revoked' });
    return ended.length;
  }

  async activeAuthorizers(exec: Executor): Promise<Authorizer[]> {
    return (await this.apps.clientCredentialKeys(exec)).map((id) => ({ kind: 'api_key', id }));
  }
}
