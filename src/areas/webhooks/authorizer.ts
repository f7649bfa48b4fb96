// What a webhook's deliveries depend on: the credential that created or last enabled it. When it
// is revoked or expires, the webhook is disabled and its queue cleared.
import type { Credential } from '../../platform/credential.js';

/** What a webhook's delivery depends on: an API key, an OAuth connection, or (client credentials) an app. */
export interface Authorizer {
  kind: string;
  id: string;
}

export function authorizerOf(credential: Credential): Authorizer {
  return credential.grant ?? { kind: 'api_key', id: credential.id };
}
