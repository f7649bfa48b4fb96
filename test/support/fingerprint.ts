// What the service has stored, as one hash: equal before and after a request that was refused
// means the request wrote nothing. Left out are the counters every request moves by design (the
// rate-limit windows, the daily usage, a key's last use) and the service's own settings.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { AppContext } from '../../src/context.js';

const TABLES = [
  'accounts',
  'api_keys',
  'audit_log',
  'resources',
  'resource_tags',
  'events',
  'webhooks',
  'webhook_deliveries',
  'apps',
  'oauth_connections',
  'oauth_codes',
  'oauth_tokens',
  'developer_sessions',
  'schedules',
] as const;

/** Columns that change without any request writing: buffered and flushed in the background. */
const VOLATILE_COLUMNS = new Set(['last_used_at']);

export async function storageFingerprint(context: AppContext): Promise<string> {
  const hash = createHash('sha256');
  for (const table of TABLES) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(context.storage.db);
    const lines = rows.map((row) =>
      JSON.stringify(
        Object.entries(row).filter(([column]) => !VOLATILE_COLUMNS.has(column)),
        (_key, value: unknown) => (typeof value === 'bigint' ? String(value) : Buffer.isBuffer(value) ? value.toString('base64') : value),
      ),
    );
    // Row order is not part of what was stored.
    hash.update(`${table}:${lines.sort().join('\n')}\n`);
  }
  return hash.digest('hex');
}
