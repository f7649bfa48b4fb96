// The key that seals webhook signing secrets at rest (SecretBox). An operator may give it as
// SECRETS_KEY; otherwise the service keeps its own in a key file beside the data, made on first
// use (32 random bytes, base64, mode 0600), which is never part of a backup. An in-memory
// database needs no file: its secrets live and die with the process, and so does its key.
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export const KEY_BYTES = 32;
export const KEY_FILE_NAME = 'secrets.key';

export type KeySource = 'environment' | 'file' | 'memory';

export interface ResolvedSecretsKey {
  key: Buffer;
  source: KeySource;
  /** The key file, when the key lives in one. */
  file: string | undefined;
  /** True when this call made the key file. */
  created: boolean;
  /** Something the operator should hear about the file (its permissions), if anything. */
  warning: string | undefined;
}

export class SecretsKeyError extends Error {
  override name = 'SecretsKeyError';
}

/** Decodes a key in the SECRETS_KEY format (32 bytes, base64); `what` names its origin in the error. */
export function decodeKey(text: string, what: string): Buffer {
  const trimmed = text.trim();
  const key = Buffer.from(trimmed, 'base64');
  if (key.length !== KEY_BYTES || !/^[A-Za-z0-9+/]+=*$/.test(trimmed)) {
    throw new SecretsKeyError(`${what} must hold 32 bytes, base64-encoded (openssl rand -base64 32)`);
  }
  return key;
}

export function encodeKey(key: Buffer): string {
  return key.toString('base64');
}

export function newKey(): Buffer {
  return randomBytes(KEY_BYTES);
}

/**
 * Where the key file of this database lives: SECRETS_KEY_FILE when set, else `secrets.key` in the
 * directory of the SQLite file, else (PostgreSQL) `./data/secrets.key`. None for `sqlite::memory:`.
 */
export function defaultKeyFile(databaseUrl: string, explicit: string | undefined): string | undefined {
  if (explicit) return resolve(explicit);
  if (databaseUrl === 'sqlite::memory:') return undefined;
  if (databaseUrl.startsWith('sqlite:')) return resolve(dirname(databaseUrl.slice('sqlite:'.length)), KEY_FILE_NAME);
  return resolve('data', KEY_FILE_NAME);
}

/** The file a rotation writes the next key to before it replaces the key file. */
export function pendingKeyFile(file: string): string {
  return `${file}.new`;
}

/** Reads a key file, or undefined when there is none. */
export function readKeyFile(file: string): Buffer | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new SecretsKeyError(`cannot read the secrets key file ${file}: ${(error as Error).message}`);
  }
  return decodeKey(text, `the secrets key file ${file}`);
}

/**
 * Writes `key` to `file` with mode 0600, atomically: the content goes to a temporary file first,
 * which is then linked (never replacing: `replace` false) or renamed (replacing) into place, so
 * no reader ever sees a partial key. Returns false when `replace` is false and the file exists.
 */
export function writeKeyFile(file: string, key: Buffer, options: { replace: boolean }): boolean {
  mkdirSync(dirname(file), { recursive: true });
  const temporary = join(dirname(file), `.${KEY_FILE_NAME}.${process.pid}.${randomBytes(4).toString('hex')}`);
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, `${encodeKey(key)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    if (options.replace) {
      renameSync(temporary, file);
      return true;
    }
    try {
      linkSync(temporary, file);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
  } finally {
    rmSync(temporary, { force: true });
    syncDirectory(dirname(file));
  }
}

/** Makes a rename in `directory` durable (where the file system allows). */
export function syncDirectory(directory: string): void {
  try {
    const fd = openSync(directory, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Not every file system lets a directory be opened for fsync; the rename is still atomic.
  }
}

function permissionWarning(file: string): string | undefined {
  const mode = statSync(file).mode & 0o777;
  if ((mode & 0o077) === 0) return undefined;
  try {
    chmodSync(file, 0o600);
    return `the secrets key file ${file} was readable by others (mode ${mode.toString(8)}); it is now 0600`;
  } catch {
    return `the secrets key file ${file} is readable by others (mode ${mode.toString(8)}): chmod 600 it`;
  }
}

/**
 * The key this process seals with: SECRETS_KEY when given, else the key file (made now when
 * absent and `create` allows), else for an in-memory database a key of this process alone.
 */
export function resolveSecretsKey(
  config: { databaseUrl: string; secretsKey: Buffer | undefined; secretsKeyFile: string | undefined },
  options: { create: boolean } = { create: true },
): ResolvedSecretsKey | undefined {
  if (config.secretsKey) return { key: config.secretsKey, source: 'environment', file: undefined, created: false, warning: undefined };
  const file = config.secretsKeyFile;
  if (file === undefined) return { key: newKey(), source: 'memory', file: undefined, created: false, warning: undefined };
  let key = readKeyFile(file);
  let created = false;
  if (key === undefined) {
    if (!options.create) return undefined;
    created = writeKeyFile(file, newKey(), { replace: false });
    // Another process may have made it first: everyone uses the file that won.
    key = readKeyFile(file);
    if (key === undefined) throw new SecretsKeyError(`the secrets key file ${file} vanished while it was being made`);
  }
  return { key, source: 'file', file, created, warning: permissionWarning(file) };
}
