// The authorization endpoint (RFC 6749 section 4.1, PKCE per RFC 7636): which client and redirect
// URI to trust, the request's checks, the approval form's CSRF token, and approval with an API key.
import { createHmac, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';
import { inTransaction } from '../../storage/transaction.js';
import { addDays, type Clock } from '../../platform/clock.js';
import { newId, sha256Hex } from '../../platform/ids.js';
import type { Scope } from '../../platform/scopes.js';
import type { AppRow, AppsService } from '../apps/service.js';
import type { AuditService } from '../audit/service.js';
import type { KeysService } from '../keys/service.js';
import { OAuthError, UntrustedRedirectError } from './errors.js';
import { grantableScopes, parseScopeParam, sameSecret, type Params } from './grants.js';
import { insertCode, insertConnection, setting, type ConnectionRow } from './store.js';

export const CONNECTION_DAYS = 30;
export const CODE_TTL_MS = 5 * 60_000;
const AUTHORIZATION_FORM_TTL_MS = 15 * 60_000;
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** The length of `state` an authorization request must send. */
export const STATE_LENGTH = { min: 8, max: 500 } as const;

export interface AuthorizationRequest {
  app: AppRow;
  redirectUri: string;
  scopes: Scope[];
  state: string;
  codeChallenge: string;
}

export class AuthorizationEndpoint {
  private signingKey: Promise<string> | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly apps: AppsService,
    private readonly keys: KeysService,
    private readonly audit: AuditService,
  ) {}

  /** Checks client_id and redirect_uri; until both are trusted nothing may be redirected. */
  async trustedClient(params: Params): Promise<{ app: AppRow; redirectUri: string }> {
    const app = params.client_id ? await this.apps.byClientId(params.client_id) : undefined;
    if (!app) throw new UntrustedRedirectError('The application is unknown (client_id).');
    const redirectUri = params.redirect_uri ?? (app.redirectUris.length === 1 ? app.redirectUris[0] : undefined);
    if (redirectUri === undefined || !app.redirectUris.includes(redirectUri)) {
      throw new UntrustedRedirectError('The redirect_uri is not registered for this application.');
    }
    return { app, redirectUri };
  }

  /** The rest of the request; faults here go back to the app's redirect URI as OAuth errors. */
  validateRequest(app: AppRow, redirectUri: string, params: Params): AuthorizationRequest {
    if (params.response_type !== 'code') throw new OAuthError('unsupported_response_type', 'response_type must be code');
    const state = params.state ?? '';
    if (state.length < STATE_LENGTH.min || state.length > STATE_LENGTH.max) {
      throw new OAuthError('invalid_request', `state must be ${STATE_LENGTH.min}-${STATE_LENGTH.max} characters`);
    }
    if (!params.code_challenge) throw new OAuthError('invalid_request', 'PKCE is required: send code_challenge and code_challenge_method=S256');
    if (params.code_challenge_method !== 'S256') throw new OAuthError('invalid_request', 'code_challenge_method must be S256');
    if (!CHALLENGE.test(params.code_challenge)) throw new OAuthError('invalid_request', 'code_challenge must be the base64url SHA-256 of the verifier');
    const requested = params.scope === undefined ? app.scopes : parseScopeParam(params.scope);
    const scopes = grantableScopes(requested, app.scopes);
    return { app, redirectUri, scopes, state, codeChallenge: params.code_challenge };
  }

  /** The parameters the approval form sends back, and a token binding them for a while (CSRF). */
  async formToken(request: AuthorizationRequest): Promise<string> {
    const expires = this.clock.now().getTime() + AUTHORIZATION_FORM_TTL_MS;
    return `${expires}.${await this.sign(request, expires)}`;
  }

  async checkFormToken(request: AuthorizationRequest, token: string | undefined): Promise<boolean> {
    const [expires, mac] = (token ?? '').split('.');
    if (!expires || !mac || Number(expires) < this.clock.now().getTime()) return false;
    return sameSecret(mac, await this.sign(request, Number(expires)));
  }

  private async sign(request: AuthorizationRequest, expires: number): Promise<string> {
    // Read once and kept; a failed read is not kept, so the next request tries again.
    this.signingKey ??= setting(this.db, 'oauth_form_key', () => randomBytes(32).toString('base64url')).catch((error: unknown) => {
      this.signingKey = undefined;
      throw error;
    });
    const material = JSON.stringify([request.app.clientId, request.redirectUri, request.scopes, request.state, request.codeChallenge, expires]);
    return createHmac('sha256', await this.signingKey)
      .update(material)
      .digest('base64url');
  }

  /**
   * Approval with an API key holding every requested scope: a connection starts (30 days, never
   * outliving the key) and a single-use code for it is returned.
   */
  async approve(request: AuthorizationRequest, apiKey: string): Promise<{ code: string } | { problem: string }> {
    const key = apiKey.startsWith(this.keys.prefix) ? await this.keys.resolve(apiKey) : undefined;
    if (!key) return { problem: 'That API key is not valid. Check it and try again.' };
    const missing = request.scopes.filter((scope) => !key.scopes.includes(scope));
    if (missing.length > 0) return { problem: `That API key does not hold every requested permission (missing: ${missing.join(', ')}).` };
    const now = this.clock.now();
    const thirtyDays = addDays(now, CONNECTION_DAYS).toISOString();
    const connection: ConnectionRow = {
      id: newId('con'),
      accountId: key.accountId,
      appId: request.app.id,
      approvingKeyId: key.id,
      scopes: request.scopes,
      createdAt: now.toISOString(),
      expiresAt: key.expiresAt < thirtyDays ? key.expiresAt : thirtyDays,
      endedAt: null,
    };
    const code = randomBytes(32).toString('base64url');
    await inTransaction(this.db, async (trx) => {
      await insertConnection(trx, connection);
      await insertCode(trx, sha256Hex(code), {
        connectionId: connection.id,
        redirectUri: request.redirectUri,
        codeChallenge: request.codeChallenge,
        expiresAt: new Date(now.getTime() + CODE_TTL_MS).toISOString(),
        usedAt: null,
      });
      await this.audit.record(trx, {
        accountId: key.accountId,
        type: 'oauth.connection_approved',
        actor: { kind: 'api_key', id: key.id },
        target: { type: 'oauth_connection', id: connection.id },
        data: { clientId: request.app.clientId, appName: request.app.name, scopes: request.scopes, expiresAt: connection.expiresAt },
      });
    });
    return { code };
  }
}
