// A confidential app's client credentials as standing authority (docs/decisions.md, "Standing
// authority"): they rest on the API key that registered the app or last changed its scopes or
// secret. When that key ends, the app's client-credentials tokens are revoked, the end is recorded
// on the app and audited, and what those tokens authorized stops with them (`credentials.ended`).
import type { Clock } from '../../platform/clock.js';
import type { Authorizer, CutOffReason } from '../../platform/credential.js';
import type { DomainEvents } from '../../domain-events.js';
import { cutOffEach, type StandingObjects } from '../../standing-authority.js';
import type { Executor } from '../../storage/schema.js';
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
    const stopped = await cutOffEach(exec, this.audit, await this.apps.restingOnKeys(exec, keyIds), {
      type: 'app.client_credentials_ended',
      target: 'app',
      cutOff: async (app) => {
        if (!(await this.apps.endClientCredentials(exec, app.id, reason))) return false;
        await revokeClientCredentialTokens(exec, app.id, this.clock.now().toISOString());
        return true;
      },
      data: (app) => ({ reason, key: app.authorizedByKeyId }),
    });
    const ids = stopped.map((app) => app.id);
    if (ids.length > 0) await this.domain.emit(exec, 'credentials.ended', { ids, how: reason === 'credential_expired' ? 'expired' : 'revoked' });
    return ids.length;
  }

  async activeAuthorizers(exec: Executor): Promise<Authorizer[]> {
    return (await this.apps.clientCredentialKeys(exec)).map((id) => ({ kind: 'api_key', id }));
  }
}
