import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';
import { isUniqueViolation } from '../../storage/errors.js';
import type { Clock } from '../../platform/clock.js';
import { DomainError, conflict, rateLimited } from '../../domain-errors.js';
import { newSecret, sha256Hex } from '../../platform/ids.js';
import type { RateLimiter } from '../../platform/rate-limit.js';
import type { AccountsService } from '../accounts/service.js';
import type { AuditService } from '../audit/service.js';
import { endSession, findLiveSession, insertSession } from './store.js';
import { inTransaction, type OutcomeRecord } from '../../storage/transaction.js';

export const SESSION_PREFIX = 'dds';
export const SIGNUP_ATTEMPTS_PER_HOUR = 5;

export interface DeveloperSession {
  account: { id: string; name: string; email: string | null; createdAt: string };
  session: { expiresAt: string };
}

export class DeveloperService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly clock: Clock,
    private readonly accounts: AccountsService,
    private readonly audit: AuditService,
    /** Signup attempts per IP, in one-hour windows (every attempt counts, failed ones too). */
    private readonly attempts: RateLimiter,
    private readonly options: { capacity: number; sessionTtlSeconds: number },
  ) {}

  /** Counts the attempt first; refused (rate_limited) on the sixth within the hour, whatever the earlier ones did. */
  async countAttempt(ip: string): Promise<void> {
    const decision = await this.attempts.check(`signup:${ip}`, SIGNUP_ATTEMPTS_PER_HOUR, true);
    if (!decision.allowed) {
      throw rateLimited(`At most ${SIGNUP_ATTEMPTS_PER_HOUR} signup attempts per hour from one address`, decision.resetSeconds);
    }
  }

  async signup(input: { name: string; email: string }, outcome?: OutcomeRecord): Promise<DeveloperSession & { token: string }> {
    const token = newSecret(SESSION_PREFIX);
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + this.options.sessionTtlSeconds * 1000).toISOString();
    return inTransaction(
      this.db,
      async (trx) => {
        if ((await this.accounts.count('signup', trx)) >= this.options.capacity) {
          throw new DomainError('signup_closed', 'Signup is closed: the service has reached its capacity');
        }
        const account = await this.accounts.create(trx, { name: input.name, email: input.email, origin: 'signup' }, { kind: 'system' });
        await insertSession(trx, sha256Hex(token), { accountId: account.id, createdAt: now.toISOString(), expiresAt });
        await this.audit.record(trx, {
          accountId: account.id,
          type: 'developer.signup',
          actor: { kind: 'developer_session', accountId: account.id },
          target: { type: 'account', id: account.id },
          data: { email: account.email },
        });
        return { account, session: { expiresAt }, token };
      },
      outcome,
    ).catch((error: unknown) => {
      // Two signups with one email at once: both pass the check, the unique index refuses the second.
      throw isUniqueViolation(error) ? conflict('An account with this email already exists') : error;
    });
  }

  async session(token: string | undefined): Promise<DeveloperSession | undefined> {
    if (!token?.startsWith(`${SESSION_PREFIX}_`)) return undefined;
    const found = await findLiveSession(this.db, sha256Hex(token), this.clock.now().toISOString());
    return found && { account: found.account, session: { expiresAt: found.expiresAt } };
  }

  async logout(token: string | undefined): Promise<void> {
    if (token) await endSession(this.db, sha256Hex(token), this.clock.now().toISOString());
  }
}
