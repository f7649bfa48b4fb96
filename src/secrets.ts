// The secrets key at start and at rotation: which key seals the webhook signing secrets of this
// database (SECRETS_KEY, the key file, or for an in-memory database one of this process alone),
// that it is the right one, and a change of key (`devdata secrets rotate-key`).
import { renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Config } from './config.js';
import { changeSecretsKey, keyVerdict, prepareSealedSecrets } from './areas/webhooks/sealed-secrets.js';
import { SecretBox } from './platform/secret-box.js';
import {
  decodeKey,
  newKey,
  pendingKeyFile,
  readKeyFile,
  resolveSecretsKey,
  syncDirectory,
  writeKeyFile,
  type KeySource,
  type ResolvedSecretsKey,
} from './platform/secrets-key.js';
import type { Storage } from './storage/database.js';

export interface SecretsStatus {
  source: KeySource;
  file: string | undefined;
  /** The key file was made by this start. */
  created: boolean;
  /** Secrets an older release stored in plain text, sealed by this start. */
  sealedNow: number;
  /** An interrupted rotation was finished by this start (its new key file put in place). */
  finishedRotation: boolean;
  warning: string | undefined;
}

export function describeKey(resolved: Pick<ResolvedSecretsKey, 'source' | 'file'>): string {
  if (resolved.source === 'environment') return 'SECRETS_KEY';
  if (resolved.source === 'file') return `the key file ${resolved.file}`;
  return "this process's in-memory key";
}

/**
 * The box that seals this database's secrets, after checking its key against what is stored,
 * finishing a rotation a crash interrupted, and sealing what older releases left in plain text.
 */
export async function openSecrets(storage: Storage, config: Config): Promise<{ box: SecretBox; status: SecretsStatus }> {
  const resolved = resolveSecretsKey(config)!;
  let box = new SecretBox(resolved.key);
  let finishedRotation = false;
  if (resolved.file !== undefined) {
    // A rotation writes the new key beside the old one, commits, then renames it into place.
    const pending = pendingKeyFile(resolved.file);
    const next = readKeyFile(pending);
    if (next !== undefined) {
      const current = await keyVerdict(storage.db, box);
      const nextBox = new SecretBox(next);
      if (current === 'differs' && (await keyVerdict(storage.db, nextBox)) === 'matches') {
        renameSync(pending, resolved.file);
        syncDirectory(dirname(resolved.file));
        box = nextBox;
        finishedRotation = true;
      } else if (current !== 'differs') {
        rmSync(pending, { force: true }); // the rotation never committed
      }
    }
  }
  const sealedNow = await prepareSealedSecrets(storage.db, box, storage.backend === 'sqlite', describeKey(resolved));
  return { box, status: { source: resolved.source, file: resolved.file, created: resolved.created, sealedNow, finishedRotation, warning: resolved.warning } };
}

export interface RotationResult {
  source: KeySource;
  file: string | undefined;
  /** Webhook secrets sealed again under the new key. */
  resealed: number;
}

/**
 * Seals every stored secret again under a new key. With a key file: a new random key (or
 * `newKeyText`) replaces the file. With SECRETS_KEY: the new key is `newKeyText` (NEW_SECRETS_KEY),
 * which the operator then sets as SECRETS_KEY. Every server must be stopped (the caller checks).
 */
export async function rotateSecretsKey(storage: Storage, config: Config, newKeyText: string | undefined): Promise<RotationResult> {
  const current = resolveSecretsKey(config, { create: false });
  if (current === undefined) {
    throw new Error(
      `there is no secrets key file at ${config.secretsKeyFile} and SECRETS_KEY is not set: nothing is sealed yet (the server makes the file at its first start)`,
    );
  }
  if (current.source === 'memory') throw new Error('an in-memory database has no stored secrets to seal again');
  if (current.source === 'environment' && newKeyText === undefined) {
    throw new Error('SECRETS_KEY is set: give the new key as NEW_SECRETS_KEY (openssl rand -base64 32), then set SECRETS_KEY to it for every server');
  }
  const next = newKeyText === undefined ? newKey() : decodeKey(newKeyText, 'NEW_SECRETS_KEY');
  if (next.equals(current.key)) throw new Error('the new key is the current key');
  const sqlite = storage.backend === 'sqlite';
  const from = new SecretBox(current.key);
  const to = new SecretBox(next);
  if (current.file === undefined)
    return { source: current.source, file: undefined, resealed: await changeSecretsKey(storage.db, from, to, sqlite, describeKey(current)) };

  // The new key is on disk before the commit, so a crash after it leaves a key that opens the
  // secrets (the next start finishes the rename), and a crash before leaves the old key in place.
  const pending = pendingKeyFile(current.file);
  writeKeyFile(pending, next, { replace: true });
  let resealed: number;
  try {
    resealed = await changeSecretsKey(storage.db, from, to, sqlite, describeKey(current));
  } catch (error) {
    rmSync(pending, { force: true });
    throw error;
  }
  renameSync(pending, current.file);
  syncDirectory(dirname(current.file));
  return { source: current.source, file: current.file, resealed };
}
