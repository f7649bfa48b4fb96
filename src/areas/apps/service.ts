import type { Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import type { Clock } from '../../platform/clock.js';
import type { Credential, CutOffReason } from '../../platform/credential.js';
import { DomainError, conflict, insufficientScope, invalidField, notFound, type ErrorDetail } from '../../domain-errors.js';
import { newId, newSecret, sha256Hex } from '../../platform/ids.js';
import { isScope, NEVER_GRANTED, NOT_AN_APP_SCOPE, OAUTH_GRANTABLE, type Scope } from '../../platform/scopes.js';
import type { AuditService } from '../audit/service.js';
import type { DomainEvents } from '../../domain-events.js';
import { inTransaction, type OutcomeRecord } from '../../storage/transaction.js';
import {
  appAuthorizingKeys,
  clientCredentialKeys,
  confidentialAppsAuthorizedBy,
  countApps,
  deleteApp,
  endClientCredentials,
  findApp,
  findAppByClientId,
  insertApp,
  listApps,
  updateApp,
  type AppRow,
} from './store.js';
import type { App, AppChanges, AppWithSecret, CreateApp } from './schemas.js';

export type { AppRow };

/** At most this many registered apps per account (api-decisions §10). */
export const MAX_APPS_PER_ACCOUNT = 50;

/** The key an app's client credentials rest on: apps are managed by API keys only (apps:manage is never granted to a token). */
function authorizingKey(caller: Credential): string | null {
  return caller.kind === 'api_key' ? caller.id : null;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const REDIRECT_URI_RULE = `https, such as https://app.example.com/callback; http only to a loopback host (${[...LOOPBACK_HOSTS].join(', ')}; any port), such as http://localhost:8080/callback`;

/** Why a redirect URI is refused (https, or http to a loopback host per RFC 8252; no fragment), or undefined. */
export function redirectUriProblem(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `must be an absolute URL: ${REDIRECT_URI_RULE}`;
  }
  if (raw.includes('#')) return 'must not contain a fragment';
  if (url.username || url.password) return 'must not contain user information';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  return `must use ${REDIRECT_URI_RULE}`;
}

function toApp(row: AppRow): App {
  return {
    id: row.id,
    clientId: row.clientId,
    name: row.name,
    type: row.type,
    redirectUris: row.redirectUris,
    scopes: row.scopes,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

export class AppsService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly domain: DomainEvents,
  ) {}

  private validate(caller: Credential, input: Pick<AppChanges, 'redirectUris' | 'scopes'>): void {
    const details: ErrorDetail[] = [];
    input.redirectUris?.forEach((uri, index) => {
      const problem = redirectUriProblem(uri);
      if (problem) details.push({ path: `/redirectUris/${index}`, message: problem });
    });
    input.scopes?.forEach((scope, index) => {
      if (!isScope(scope)) details.push({ path: `/scopes/${index}`, message: NOT_AN_APP_SCOPE });
      else if (!OAUTH_GRANTABLE.has(scope)) details.push({ path: `/scopes/${index}`, message: `${scope} ${NEVER_GRANTED}` });
    });
    if (details.length > 0) throw new DomainError('invalid_request', details.map((d) => `${d.path.slice(1)} ${d.message}`).join('; '), details);
    const missing = (input.scopes ?? []).filter((scope) => !caller.scopes.includes(scope as Scope));
    if (missing.length > 0) throw insufficientScope(missing as Scope[]);
  }

  async create(caller: Credential, input: CreateApp, outcome?: OutcomeRecord): Promise<AppWithSecret> {
    this.validate(caller, input);
    const now = this.clock.now().toISOString();
    const clientSecret = input.type === 'confidential' ? newSecret('ddcs') : undefined;
    const row: AppRow = {
      id: newId('app'),
      accountId: caller.accountId,
      clientId: newId('ddc'),
      name: input.name.trim(),
      type: input.type,
      redirectUris: [...new Set(input.redirectUris)],
      scopes: [...new Set(input.scopes)],
      clientSecretHash: clientSecret ? sha256Hex(clientSecret) : null,
      authorizedByKeyId: authorizingKey(caller),
      clientCredentialsEnded: null,
      createdAt: now,
      updatedAt: now,
    };
    return inTransaction(
      this.db,
      async (trx) => {
        // The audit record takes the account's row lock first, so two registrations cannot both pass the cap.
        await this.audit.recordFor(trx, caller, 'app.created', { type: 'app', id: row.id }, { name: row.name, clientId: row.clientId, type: row.type });
        if ((await countApps(trx, caller.accountId)) >= MAX_APPS_PER_ACCOUNT) {
          throw conflict(`An account may have at most ${MAX_APPS_PER_ACCOUNT} apps`);
        }
        await insertApp(trx, row);
        return { ...toApp(row), ...(clientSecret ? { clientSecret } : {}) };
      },
      outcome,
    );
  }

  async list(accountId: string): Promise<App[]> {
    return (await listApps(this.db, accountId)).map(toApp);
  }

  async get(accountId: string, id: string): Promise<App> {
    return toApp(await this.require(this.db, accountId, id));
  }

  private async require(exec: Executor, accountId: string, id: string): Promise<AppRow> {
    const row = await findApp(exec, accountId, id);
    if (!row) throw notFound('App');
    return row;
  }

  async update(caller: Credential, id: string, input: AppChanges, outcome?: OutcomeRecord): Promise<App> {
    if (input.type !== undefined) throw invalidField('/type', 'cannot be changed; register a new app instead');
    if (input.name === undefined && input.redirectUris === undefined && input.scopes === undefined) {
      throw new DomainError('invalid_request', 'Send at least one of name, redirectUris, scopes');
    }
    this.validate(caller, input);
    return inTransaction(
      this.db,
      async (trx) => {
        const current = await this.require(trx, caller.accountId, id);
        const next: AppRow = {
          ...current,
          name: input.name?.trim() ?? current.name,
          redirectUris: input.redirectUris ? [...new Set(input.redirectUris)] : current.redirectUris,
          scopes: input.scopes ? [...new Set(input.scopes)] : current.scopes,
          // Whoever changes what the app may be granted becomes the key its client credentials rest on.
          ...(input.scopes ? { authorizedByKeyId: authorizingKey(caller), clientCredentialsEnded: null } : {}),
          updatedAt: this.clock.now().toISOString(),
        };
        await updateApp(trx, next);
        await this.audit.recordFor(
          trx,
          caller,
          'app.updated',
          { type: 'app', id },
          { changed: (['name', 'redirectUris', 'scopes'] as const).filter((field) => input[field] !== undefined) },
        );
        return toApp(next);
      },
      outcome,
    );
  }

  /** Deleting an app ends its connections and tokens (their rows go with it). */
  async delete(caller: Credential, id: string, outcome?: OutcomeRecord): Promise<void> {
    await inTransaction(
      this.db,
      async (trx) => {
        const app = await this.require(trx, caller.accountId, id);
        await this.domain.emit(trx, 'app.deleting', { app });
        await deleteApp(trx, id);
        await this.audit.recordFor(trx, caller, 'app.deleted', { type: 'app', id }, { clientId: app.clientId });
      },
      outcome,
    );
  }

  async rotateSecret(caller: Credential, id: string, outcome?: OutcomeRecord): Promise<AppWithSecret & { clientSecret: string }> {
    const clientSecret = newSecret('ddcs');
    return inTransaction(
      this.db,
      async (trx) => {
        const current = await this.require(trx, caller.accountId, id);
        if (current.type !== 'confidential') throw conflict('Public apps have no client secret');
        // The new secret was handed to the caller: the client credentials now rest on its key.
        const next = {
          ...current,
          clientSecretHash: sha256Hex(clientSecret),
          authorizedByKeyId: authorizingKey(caller),
          updatedAt: this.clock.now().toISOString(),
        };
        await updateApp(trx, next);
        await this.audit.recordFor(trx, caller, 'app.secret_rotated', { type: 'app', id });
        return { ...toApp(next), clientSecret };
      },
      outcome,
    );
  }

  /** The key each of these apps' client credentials rest on (apps that are gone have none). */
  authorizingKeys(ids: readonly string[]): Promise<Map<string, string>> {
    return appAuthorizingKeys(this.db, ids);
  }

  /** The confidential apps whose client credentials rest on these keys and have not ended. */
  restingOnKeys(exec: Executor, keyIds: readonly string[]): Promise<AppRow[]> {
    return confidentialAppsAuthorizedBy(exec, keyIds);
  }

  /** The keys confidential apps' live client credentials rest on. */
  clientCredentialKeys(exec: Executor): Promise<string[]> {
    return clientCredentialKeys(exec);
  }

  /** Records that an app's client credentials ended with their key; false when that was already recorded. */
  endClientCredentials(exec: Executor, appId: string, reason: CutOffReason): Promise<boolean> {
    return endClientCredentials(exec, appId, reason, this.clock.now().toISOString());
  }

  /** The app with this client id, for the OAuth endpoints. */
  byClientId(clientId: string, exec: Executor = this.db): Promise<AppRow | undefined> {
    return findAppByClientId(exec, clientId);
  }
}
