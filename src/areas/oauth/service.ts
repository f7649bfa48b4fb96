// The OAuth 2.0 authorization server (RFC 6749, 7636 PKCE, 7009 revocation, 9207 iss, 9700
// security BCP): the token endpoint with its three grants, revocation, and access tokens as API
// credentials. The authorization endpoint (authorization.ts) and the connections' ends
// (connections.ts) are modules of their own; grants.ts holds the scope rules both endpoints apply.
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import { inTransaction } from '../../storage/transaction.js';
import type { Clock } from '../../platform/clock.js';
import type { Credential, CredentialResolver } from '../../platform/credential.js';
import { newId, newSecret, sha256Hex } from '../../platform/ids.js';
import { isScope, type Scope } from '../../platform/scopes.js';
import type { DomainEvents } from '../../domain-events.js';
import type { AppRow, AppsService } from '../apps/service.js';
import type { AuditService } from '../audit/service.js';
import type { KeysService } from '../keys/service.js';
import { AuthorizationEndpoint } from './authorization.js';
import { ClientCredentialsAuthority } from './client-credentials.js';
import { OAuthConnections } from './connections.js';
import { OAuthError } from './errors.js';
import { grantableScopes, parseScopeParam, sameSecret, stillAllowed, type Params } from './grants.js';
import {
  findCode,
  findConnection,
  findToken,
  findUsableAccessToken,
  insertToken,
  revokeToken,
  rotateRefreshToken,
  takeCode,
  type CodeRow,
  type ConnectionRow,
} from './store.js';

export { CODE_TTL_MS, CONNECTION_DAYS, type AuthorizationRequest } from './authorization.js';
export { OAuthError, UntrustedRedirectError } from './errors.js';

export const ACCESS_TOKEN_PREFIX = 'dda';
export const REFRESH_TOKEN_PREFIX = 'ddr';
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/** RFC 6749 §2.3.1: Basic credentials are form-urlencoded first; undefined when the encoding is broken. */
function formUrlDecoded(text: string): string | undefined {
  try {
    const decoded = decodeURIComponent(text.replace(/\+/g, ' '));
    // No client id or secret holds a NUL (PostgreSQL could not even look one up).
    return decoded.includes('\u0000') ? undefined : decoded;
  } catch {
    return undefined;
  }
}

export class OAuthService implements CredentialResolver {
  readonly prefix = `${ACCESS_TOKEN_PREFIX}_`;
  readonly authorization: AuthorizationEndpoint;
  readonly connections: OAuthConnections;
  /** Apps' client credentials, which end with the key they rest on (registered with StandingAuthority). */
  readonly clientCredentialsAuthority: ClientCredentialsAuthority;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly apps: AppsService,
    private readonly keys: KeysService,
    private readonly audit: AuditService,
    private readonly domain: DomainEvents,
    private readonly options: { accessTokenTtlSeconds: number; issuer: () => string },
  ) {
    this.authorization = new AuthorizationEndpoint(db, clock, apps, keys, audit);
    this.connections = new OAuthConnections(db, clock, keys, audit, domain);
    this.clientCredentialsAuthority = new ClientCredentialsAuthority(clock, apps, audit, domain);
  }

  get issuer(): string {
    return this.options.issuer();
  }

  // ---- token endpoint ------------------------------------------------------------------------

  /**
   * Client authentication: confidential apps with HTTP Basic only (a form client_id must match),
   * public apps with client_id and no secret.
   */
  async authenticateClient(authorization: string | undefined, form: Params): Promise<AppRow> {
    const invalid = (description: string) => new OAuthError('invalid_client', description);
    if (authorization !== undefined) {
      const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
      const decoded = match ? Buffer.from(match[1] ?? '', 'base64').toString('utf8') : '';
      const colon = decoded.indexOf(':');
      if (colon < 0) throw invalid('Malformed HTTP Basic credentials');
      const clientId = formUrlDecoded(decoded.slice(0, colon));
      const secret = formUrlDecoded(decoded.slice(colon + 1));
      if (clientId === undefined || secret === undefined) throw invalid('Malformed HTTP Basic credentials: invalid percent-encoding');
      if (form.client_id !== undefined && form.client_id !== clientId) throw invalid('client_id does not match the authenticated client');
      if (form.client_secret !== undefined) throw invalid('Send the client secret in one place: HTTP Basic');
      const app = await this.apps.byClientId(clientId);
      if (app?.type !== 'confidential' || app.clientSecretHash === null || !sameSecret(sha256Hex(secret), app.clientSecretHash)) {
        throw invalid('Client authentication failed');
      }
      return app;
    }
    if (form.client_id === undefined) throw invalid('Identify the client: client_id (public apps) or HTTP Basic (confidential apps)');
    const app = await this.apps.byClientId(form.client_id);
    if (!app) throw invalid('Client authentication failed');
    if (app.type === 'confidential') throw invalid('Confidential apps must authenticate with HTTP Basic');
    if (form.client_secret !== undefined) throw invalid('Public apps have no client secret and must not send one');
    return app;
  }

  async token(app: AppRow, form: Params): Promise<TokenResponse> {
    switch (form.grant_type) {
      case 'authorization_code':
        return this.exchangeCode(app, form);
      case 'refresh_token':
        return this.refresh(app, form);
      case 'client_credentials':
        return this.clientCredentials(app, form);
      case undefined:
        throw new OAuthError('invalid_request', 'grant_type is required');
      default:
        throw new OAuthError('unsupported_grant_type', `grant_type ${form.grant_type} is not supported`);
    }
  }

  /**
   * Runs a token request in one transaction that commits even when it ends in an OAuth error, so
   * what the refusal itself changed (a spent code, an ended connection, its audit) stays done.
   */
  private async committing<T>(work: (trx: Executor) => Promise<T>): Promise<T> {
    const outcome = await inTransaction(this.db, async (trx) => {
      try {
        return { value: await work(trx) };
      } catch (error) {
        if (error instanceof OAuthError) return { error };
        throw error;
      }
    });
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  }

  private async exchangeCode(app: AppRow, form: Params): Promise<TokenResponse> {
    if (!form.code || !form.redirect_uri || !form.code_verifier) throw new OAuthError('invalid_request', 'code, redirect_uri and code_verifier are required');
    const codeHash = sha256Hex(form.code);
    const nowIso = this.clock.now().toISOString();
    return this.committing(async (trx) => {
      const issuedTo = await findCode(trx, codeHash);
      const connection = issuedTo && (await findConnection(trx, issuedTo.connectionId));
      // Another client cannot spend (or probe) the code.
      if (!connection || connection.appId !== app.id) throw new OAuthError('invalid_grant', 'The authorization code is invalid');
      // The first attempt of its client spends the code, whether or not it succeeds.
      if (!(await takeCode(trx, codeHash, nowIso))) {
        // A code used twice may have been stolen: what it issued is revoked (RFC 6749 §4.1.2).
        await this.connections.end(trx, [connection], 'authorization_code_reused');
        throw new OAuthError('invalid_grant', 'The authorization code was already used; the tokens issued from it are revoked');
      }
      const code = issuedTo as CodeRow;
      if (code.expiresAt <= nowIso) throw new OAuthError('invalid_grant', 'The authorization code has expired');
      if (code.redirectUri !== form.redirect_uri) throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
      if (!VERIFIER.test(form.code_verifier as string)) throw new OAuthError('invalid_grant', 'code_verifier must be 43-128 URL-safe characters');
      if (!sameSecret(s256(form.code_verifier as string), code.codeChallenge))
        throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
      await this.requireLive(trx, connection);
      return this.issue(trx, app, connection, grantableScopes(stillAllowed(connection.scopes, app), app.scopes), true);
    });
  }

  private async refresh(app: AppRow, form: Params): Promise<TokenResponse> {
    if (!form.refresh_token) throw new OAuthError('invalid_request', 'refresh_token is required');
    const hash = sha256Hex(form.refresh_token);
    const nowIso = this.clock.now().toISOString();
    return this.committing(async (trx) => {
      const token = await findToken(trx, hash);
      if (token?.kind !== 'refresh' || token.appId !== app.id || token.connectionId === null) {
        throw new OAuthError('invalid_grant', 'The refresh token is invalid');
      }
      const connection = (await findConnection(trx, token.connectionId)) as ConnectionRow;
      if (token.rotatedAt === null && token.revokedAt !== null) throw new OAuthError('invalid_grant', 'The refresh token has been revoked');
      if (token.rotatedAt === null) {
        // Everything that can refuse the request comes before the rotation, which must not be lost.
        await this.requireLive(trx, connection);
        const allowed = stillAllowed(token.scopes, app);
        const scopes = grantableScopes(form.scope === undefined ? allowed : parseScopeParam(form.scope), allowed);
        if (await rotateRefreshToken(trx, hash, nowIso)) return this.issue(trx, app, connection, scopes, true);
      }
      // Reuse of a rotated refresh token (RFC 9700 §4.14.2), or losing a race to rotate it: the
      // whole connection ends, recorded.
      await this.audit.record(trx, {
        accountId: connection.accountId,
        type: 'oauth.refresh_token_reused',
        actor: { kind: 'system' },
        target: { type: 'oauth_connection', id: connection.id },
        data: { clientId: app.clientId },
      });
      await this.connections.end(trx, [connection], 'refresh_token_reused');
      throw new OAuthError('invalid_grant', 'The refresh token was already used; the connection has ended and must be approved again');
    });
  }

  private async clientCredentials(app: AppRow, form: Params): Promise<TokenResponse> {
    if (app.type !== 'confidential') throw new OAuthError('unauthorized_client', 'Only confidential apps may use client_credentials');
    // The app row was just read to authenticate the client: only its key's state is left to ask.
    const keyId = app.clientCredentialsEnded === null ? app.authorizedByKeyId : null;
    if (keyId === null || !(await this.keys.usableIds([keyId])).has(keyId)) {
      throw new OAuthError('invalid_client', 'The API key that registered this app (or last changed its scopes or secret) has expired or was revoked');
    }
    const scopes = form.scope === undefined ? (app.scopes.filter(isScope) as Scope[]) : grantableScopes(parseScopeParam(form.scope), app.scopes);
    return inTransaction(this.db, (trx) => this.issue(trx, app, undefined, scopes, false));
  }

  /** An access token (at most the configured lifetime, never past the connection) and maybe a refresh token. */
  private async issue(exec: Executor, app: AppRow, connection: ConnectionRow | undefined, scopes: Scope[], withRefresh: boolean): Promise<TokenResponse> {
    const now = this.clock.now();
    const ttlMs = Math.min(this.options.accessTokenTtlSeconds * 1000, connection ? Date.parse(connection.expiresAt) - now.getTime() : Infinity);
    const accessToken = newSecret(ACCESS_TOKEN_PREFIX);
    const base = {
      appId: app.id,
      accountId: connection?.accountId ?? app.accountId,
      connectionId: connection?.id ?? null,
      scopes,
      createdAt: now.toISOString(),
      revokedAt: null,
      rotatedAt: null,
    };
    await insertToken(exec, sha256Hex(accessToken), { ...base, id: newId('tok'), kind: 'access', expiresAt: new Date(now.getTime() + ttlMs).toISOString() });
    const response: TokenResponse = {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: Math.max(1, Math.floor(ttlMs / 1000)),
      scope: scopes.join(' '),
    };
    if (withRefresh && connection) {
      const refreshToken = newSecret(REFRESH_TOKEN_PREFIX);
      await insertToken(exec, sha256Hex(refreshToken), { ...base, id: newId('tok'), kind: 'refresh', expiresAt: connection.expiresAt });
      response.refresh_token = refreshToken;
    }
    return response;
  }

  /** The connection must be open, unexpired, and its approving key still usable. */
  private async requireLive(exec: Executor, connection: ConnectionRow): Promise<void> {
    const nowIso = this.clock.now().toISOString();
    if (connection.endedAt !== null) throw new OAuthError('invalid_grant', 'The connection has ended; the user must approve again');
    if (connection.expiresAt <= nowIso) throw new OAuthError('invalid_grant', 'The connection has expired; the user must approve again');
    if (!(await this.keys.usableIds([connection.approvingKeyId], exec)).has(connection.approvingKeyId)) {
      await this.connections.end(exec, [connection], 'approving_key_expired');
      throw new OAuthError('invalid_grant', 'The API key that approved the connection has expired or was revoked');
    }
  }

  /** RFC 7009: a refresh token ends its connection; an access token ends itself; unknown tokens are fine. */
  async revoke(app: AppRow, token: string | undefined): Promise<void> {
    if (!token) throw new OAuthError('invalid_request', 'token is required');
    const hash = sha256Hex(token);
    await inTransaction(this.db, async (trx) => {
      const row = await findToken(trx, hash);
      if (!row || row.appId !== app.id) return;
      if (row.kind === 'refresh' && row.connectionId !== null) {
        const connection = await findConnection(trx, row.connectionId);
        if (connection) await this.connections.end(trx, [connection], 'revoked');
      } else {
        await revokeToken(trx, hash, this.clock.now().toISOString());
        await this.domain.emit(trx, 'credentials.ended', { ids: [row.id], how: 'revoked' });
      }
    });
  }

  /** Which of these apps may use client credentials now: they exist and the key they rest on is usable. */
  async liveClientCredentialApps(ids: readonly string[]): Promise<Set<string>> {
    const appKeys = await this.apps.authorizingKeys(ids);
    const usable = await this.keys.usableIds([...new Set(appKeys.values())]);
    return new Set([...appKeys].filter(([, keyId]) => usable.has(keyId)).map(([appId]) => appId));
  }

  // ---- access tokens as API credentials ------------------------------------------------------

  async resolve(secret: string): Promise<Credential | undefined> {
    const nowIso = this.clock.now().toISOString();
    const token = await findUsableAccessToken(this.db, sha256Hex(secret), nowIso);
    if (!token) return undefined;
    if (token.connectionId !== null && (token.connectionExpiresAt === null || token.connectionExpiresAt <= nowIso)) return undefined;
    // No token outlives the key its grant rests on: the connection's approving key, or the app's.
    if (token.authorizingKeyId === null || !(await this.keys.usableIds([token.authorizingKeyId])).has(token.authorizingKeyId)) return undefined;
    return {
      kind: 'oauth_access_token',
      id: token.id,
      accountId: token.accountId,
      accountName: token.accountName,
      scopes: token.scopes.filter(isScope),
      expiresAt: token.expiresAt,
      clientId: token.clientId,
      grant: token.connectionId !== null ? { kind: 'oauth_connection', id: token.connectionId } : { kind: 'oauth_app', id: token.appId },
      rateLimitKey: token.connectionId !== null ? `connection:${token.connectionId}` : `app:${token.appId}`,
    };
  }
}
