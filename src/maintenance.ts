// What `devdata backup`, `restore` and `secrets rotate-key` do, with the checks around them. SQLite
// only for backup and restore: PostgreSQL has its own tools (pg_dump, pg_restore), and the
// commands say so.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from './config.js';
import { judgeKey } from './areas/webhooks/sealed-secrets.js';
import { PLAIN_PREFIX, SecretBox } from './platform/secret-box.js';
import { resolveSecretsKey } from './platform/secrets-key.js';
import { backupSqlite, inspectBackup, installBackup, sqliteFileOf, sqliteInUse } from './storage/backup.js';
import { openStorage } from './storage/database.js';
import { migrations as knownMigrations } from './storage/migrations/index.js';
import { describeKey, rotateSecretsKey, type RotationResult } from './secrets.js';

/** A failure the operator can act on. `exitCode` 2: the command cannot work for this database at all. */
export class MaintenanceError extends Error {
  override name = 'MaintenanceError';
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
  }
}

const PG_BACKUP = [
  "devdata backup copies SQLite databases; DATABASE_URL names a PostgreSQL database. Use PostgreSQL's own tools,",
  'which take a consistent copy while the servers run:',
  '  pg_dump --format=custom --file=devdata.dump "$DATABASE_URL"',
  'The dump holds the webhook signing secrets sealed; keep the secrets key (SECRETS_KEY) apart from it.',
  'See docs/operating.md, "Backups on PostgreSQL".',
].join('\n');

const PG_RESTORE = [
  'devdata restore installs SQLite backups; DATABASE_URL names a PostgreSQL database. Stop every server, then:',
  '  pg_restore --clean --if-exists --no-owner --dbname="$DATABASE_URL" devdata.dump',
  'and start the servers with the SECRETS_KEY the dumped database used. See docs/operating.md, "Backups on PostgreSQL".',
].join('\n');

function databaseFile(config: Config, pgGuidance: string): string {
  if (config.databaseUrl === 'sqlite::memory:')
    throw new MaintenanceError(
      'DATABASE_URL is sqlite::memory:, a database that lives only inside one process: there is nothing to back up or restore into',
      2,
    );
  const file = sqliteFileOf(config.databaseUrl);
  if (file === undefined) throw new MaintenanceError(pgGuidance, 2);
  return resolve(file);
}

function inUseMessage(file: string, what: string): string {
  return `${file} is open in another process (a running devdata server, or a command beside it): stop the server first (for example systemctl stop devdata), then ${what}`;
}

export interface BackupReport {
  database: string;
  file: string;
  bytes: number;
  migrations: string[];
  /** Where the key of the secrets in the backup is: never inside the backup. */
  key: string;
}

/** A consistent copy of the SQLite database while the server runs (SQLite's online backup API). */
export async function backup(config: Config, destination: string): Promise<BackupReport> {
  const database = databaseFile(config, PG_BACKUP);
  const file = resolve(destination);
  if ([database, `${database}-wal`, `${database}-shm`].includes(file))
    throw new MaintenanceError(`the backup must go to another file than the database itself (${database})`);
  if (config.secretsKeyFile !== undefined && file === resolve(config.secretsKeyFile))
    throw new MaintenanceError(`${file} is the secrets key file: choose another name for the backup`);
  const { bytes, migrations } = await backupSqlite(database, file);
  return { database, file, bytes, migrations, key: config.secretsKey ? 'SECRETS_KEY' : `the key file ${config.secretsKeyFile}` };
}

export interface RestoreReport {
  database: string;
  file: string;
  accounts: number;
  /** Where the database it replaced was kept, if there was one. */
  previous: string | undefined;
  /** Migrations the backup lacks, applied at the next start. */
  pending: string[];
}

/**
 * Installs a backup as the database DATABASE_URL names, after checking it (intact, a devdata
 * database, no migration this version does not know, secrets sealed with the key found here) and
 * that no server has the database open. The database it replaces is kept beside it.
 */
export async function restore(config: Config, source: string, now: Date = new Date()): Promise<RestoreReport> {
  const database = databaseFile(config, PG_RESTORE);
  const file = resolve(source);
  if (file === database) throw new MaintenanceError(`${file} is the database itself: restore installs a backup into it`);
  const inspected = inspectBackup(file);
  const known = Object.keys(knownMigrations);
  const unknown = inspected.migrations.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    throw new MaintenanceError(
      `${file} was made by a newer devdata (migrations ${unknown.join(', ')} are unknown to this version): install that version or a newer one first`,
    );
  }
  const key = resolveSecretsKey(config, { create: false });
  if (key === undefined) {
    if (inspected.keyCheck !== undefined || inspected.secrets.some((secret) => !secret.startsWith(PLAIN_PREFIX))) {
      throw new MaintenanceError(
        `${file} holds webhook signing secrets sealed with a key, and there is none here (no SECRETS_KEY, no ${config.secretsKeyFile}): ` +
          `copy the secrets.key of the installation the backup came from to ${config.secretsKeyFile} (mode 0600), or set SECRETS_KEY to it, and run restore again`,
      );
    }
  } else if (judgeKey(new SecretBox(key.key), inspected.keyCheck, inspected.secrets) === 'differs') {
    throw new MaintenanceError(
      `the webhook signing secrets in ${file} were sealed with another key than ${describeKey(key)}: put the key of the installation ` +
        'the backup came from in its place (its secrets.key, or SECRETS_KEY), and run restore again',
    );
  }
  if (sqliteInUse(database)) throw new MaintenanceError(inUseMessage(database, 'run restore again'));
  const previous = existsSync(database) ? `${database}.pre-restore-${now.toISOString().replace(/[:.]/g, '-')}` : undefined;
  await installBackup(file, database, previous);
  return { database, file, accounts: inspected.accounts, previous, pending: known.filter((name) => !inspected.migrations.includes(name)) };
}

/**
 * Seals every webhook signing secret again under a new key. On SQLite the server must be stopped
 * (checked: it keeps the old key in memory); on PostgreSQL every process must be, which no process
 * can see, so the operator says so with `serversStopped`.
 */
export async function rotateKey(config: Config, options: { serversStopped: boolean; newKey: string | undefined }): Promise<RotationResult> {
  if (config.databaseUrl === 'sqlite::memory:')
    throw new MaintenanceError('DATABASE_URL is sqlite::memory:: an in-memory database keeps no secrets to seal again', 2);
  const file = sqliteFileOf(config.databaseUrl);
  if (file !== undefined && sqliteInUse(resolve(file))) throw new MaintenanceError(inUseMessage(resolve(file), 'rotate the key'));
  if (file === undefined && !options.serversStopped) {
    throw new MaintenanceError(
      'on PostgreSQL every devdata process must be stopped while the key changes (a running one keeps the old key): stop them all, then run this again with --servers-stopped',
      2,
    );
  }
  const storage = openStorage(config.databaseUrl);
  try {
    await storage.migrate();
    return await rotateSecretsKey(storage, config, options.newKey);
  } catch (error) {
    if (error instanceof MaintenanceError) throw error;
    throw new MaintenanceError((error as Error).message);
  } finally {
    await storage.close();
  }
}
