// SQLite backups with SQLite's online backup API (a consistent copy while the server writes, not a
// file copy), their checks, and installing one in place of a database.
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import SQLite from './sqlite-driver.js';
import { syncDirectory } from '../platform/secrets-key.js';

export class BackupError extends Error {
  override name = 'BackupError';
}

/** The file path of a `sqlite:<path>` URL; undefined for other databases. */
export function sqliteFileOf(databaseUrl: string): string | undefined {
  return databaseUrl.startsWith('sqlite:') ? databaseUrl.slice('sqlite:'.length) : undefined;
}

/**
 * Whether another connection has the database open: a running server, or a command beside it.
 * In WAL mode every open connection holds a shared lock on the file, so an exclusive lock is
 * granted only when there is none (and is released at once).
 */
export function sqliteInUse(path: string): boolean {
  if (!existsSync(path)) return false;
  const db = new SQLite(path, { fileMustExist: true, timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    try {
      db.exec('BEGIN EXCLUSIVE');
      db.exec('ROLLBACK');
      return false;
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_BUSY') return true;
      throw error;
    }
  } finally {
    db.close();
  }
}

function tableNames(db: SQLite.Database): Set<string> {
  return new Set((db.prepare(`select name from sqlite_master where type = 'table'`).all() as Array<{ name: string }>).map((row) => row.name));
}

/** The migrations applied to a devdata database, oldest first; throws when it is not one. */
function appliedMigrations(db: SQLite.Database, label: string): string[] {
  const tables = tableNames(db);
  if (!tables.has('kysely_migration') || !tables.has('accounts'))
    throw new BackupError(`${label} is not a devdata database (it has no migration history or accounts table)`);
  return (db.prepare('select name from kysely_migration order by name').all() as Array<{ name: string }>).map((row) => row.name);
}

function integrityProblems(db: SQLite.Database): string[] {
  const rows = db.pragma('integrity_check') as Array<{ integrity_check: string }>;
  return rows.map((row) => row.integrity_check).filter((text) => text !== 'ok');
}

/** Runs `work` on the database at `path`, closing it afterwards. */
async function withDatabase<T>(path: string, options: SQLite.Options, work: (db: SQLite.Database) => T | Promise<T>): Promise<T> {
  const db = new SQLite(path, options);
  try {
    return await work(db);
  } finally {
    db.close();
  }
}

/** The online backup API from `db` to the file `destination`; every step copies all pages, one read of the database. */
function onlineCopy(db: SQLite.Database, destination: string): Promise<unknown> {
  return db.backup(destination, { progress: ({ totalPages }) => Math.max(totalPages, 100) });
}

function fsyncFile(path: string): void {
  const fd = openSync(path, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Copies the database at `source` with the online backup API into `destination` (first a
 * temporary file beside it, renamed into place when complete). Each step copies every page, so a
 * step is one consistent read of the database and the server's writes meanwhile do not restart it
 * forever. The copy then leaves WAL mode (one self-contained file) and is vacuumed, which drops the
 * free pages where deleted rows' bytes remained, and is checked before it is renamed into place.
 */
export async function backupSqlite(source: string, destination: string): Promise<{ bytes: number; migrations: string[] }> {
  if (!existsSync(source)) throw new BackupError(`there is no database at ${source}`);
  mkdirSync(dirname(destination), { recursive: true });
  const temporary = join(dirname(destination), `.${basename(destination)}.${process.pid}.${randomBytes(4).toString('hex')}.partial`);
  let migrations: string[];
  try {
    migrations = await withDatabase(source, { fileMustExist: true, timeout: 5000 }, async (db) => {
      const applied = appliedMigrations(db, source);
      await onlineCopy(db, temporary);
      return applied;
    });
    await withDatabase(temporary, {}, (copy) => {
      copy.pragma('journal_mode = DELETE');
      copy.exec('VACUUM');
      const problems = integrityProblems(copy);
      if (problems.length > 0) throw new BackupError(`the copy failed its integrity check: ${problems.slice(0, 3).join('; ')}`);
    });
    fsyncFile(temporary);
    renameSync(temporary, destination);
    syncDirectory(dirname(destination));
  } finally {
    rmSync(temporary, { force: true });
    rmSync(`${temporary}-journal`, { force: true });
  }
  return { bytes: statSync(destination).size, migrations };
}

export interface InspectedBackup {
  migrations: string[];
  accounts: number;
  /** The sealed check value of the secrets key, when the backup has one. */
  keyCheck: string | undefined;
  /** Every stored webhook signing secret (sealed, or plain text from an older release). */
  secrets: string[];
}

/** Opens a backup read-only and checks it: a SQLite file, intact, a devdata database. */
export function inspectBackup(file: string): InspectedBackup {
  if (!existsSync(file)) throw new BackupError(`there is no file ${file}`);
  let db: SQLite.Database;
  try {
    db = new SQLite(file, { readonly: true, fileMustExist: true });
    db.pragma('schema_version');
  } catch (error) {
    throw new BackupError(`${file} is not a SQLite database: ${(error as Error).message}`);
  }
  try {
    let problems: string[];
    try {
      problems = integrityProblems(db);
    } catch (error) {
      throw new BackupError(`${file} failed its integrity check: ${(error as Error).message}`);
    }
    if (problems.length > 0) throw new BackupError(`${file} failed its integrity check: ${problems.slice(0, 3).join('; ')}`);
    const migrations = appliedMigrations(db, file);
    const tables = tableNames(db);
    const keyCheck = tables.has('service_settings')
      ? (db.prepare(`select value from service_settings where name = 'secrets_key_check'`).pluck().get() as string | undefined)
      : undefined;
    const secrets = tables.has('webhooks') ? (db.prepare('select secret from webhooks').pluck().all() as string[]) : [];
    const accounts = db.prepare('select count(*) from accounts').pluck().get() as number;
    return { migrations, accounts, keyCheck, secrets };
  } finally {
    db.close();
  }
}

/**
 * Installs the backup `file` as the database at `target` with the backup API, which replaces the
 * target's pages in one transaction of its own (a crash leaves the old database whole). The
 * database it replaces is first copied to `previous`. The caller makes sure no one has `target` open.
 */
export async function installBackup(file: string, target: string, previous: string | undefined): Promise<void> {
  mkdirSync(dirname(target), { recursive: true });
  if (previous !== undefined && existsSync(target)) {
    await withDatabase(target, { fileMustExist: true }, (current) => onlineCopy(current, previous));
    await withDatabase(previous, {}, (copy) => copy.pragma('journal_mode = DELETE'));
  }
  await withDatabase(file, { readonly: true, fileMustExist: true }, (backup) => onlineCopy(backup, target));
  await withDatabase(target, { fileMustExist: true }, (restored) => {
    restored.pragma('journal_mode = WAL');
    const problems = integrityProblems(restored);
    if (problems.length > 0) throw new BackupError(`the restored database failed its integrity check: ${problems.slice(0, 3).join('; ')}`);
  });
}
