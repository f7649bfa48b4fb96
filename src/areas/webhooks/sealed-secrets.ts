// Webhook signing secrets at rest: that the key in use is the one they were sealed with, that none
// is left in plain text by an older release, and a change of key. A check value (a known text
// sealed under the key, in service_settings) tells a wrong key at once, before any webhook exists,
// so two PostgreSQL processes with different keys cannot both run.
import { sql, type Kysely } from 'kysely';
import type { Database, Executor } from '../../storage/schema.js';
import { PLAIN_PREFIX, type SecretBox } from '../../platform/secret-box.js';
import { readSetting, setting, writeSetting } from '../../storage/settings.js';
import { resealSecret, storedSecrets } from './store.js';
import { resealOutcomes } from '../../idempotency/service.js';

export const KEY_CHECK_SETTING = 'secrets_key_check';
const KEY_CHECK_TEXT = "devdata: the key that seals this database's secrets";

export class WrongSecretsKeyError extends Error {
  override name = 'WrongSecretsKeyError';
}

/** matches: the key opens what is stored; differs: it does not; nothing-sealed: any key will do. */
export type KeyVerdict = 'matches' | 'differs' | 'nothing-sealed';

/** Judges a key against stored values: the check value when there is one, else every sealed secret. */
export function judgeKey(box: SecretBox, check: string | undefined, secrets: string[]): KeyVerdict {
  if (check !== undefined) return box.opens(check) ? 'matches' : 'differs';
  const sealed = secrets.filter((secret) => !secret.startsWith(PLAIN_PREFIX));
  if (sealed.length === 0) return 'nothing-sealed';
  return sealed.every((secret) => box.opens(secret)) ? 'matches' : 'differs';
}

export async function keyVerdict(db: Executor, box: SecretBox): Promise<KeyVerdict> {
  const check = await readSetting(db, KEY_CHECK_SETTING);
  return judgeKey(box, check, check === undefined ? (await storedSecrets(db)).map((row) => row.secret) : []);
}

function wrongKey(described: string): WrongSecretsKeyError {
  return new WrongSecretsKeyError(
    `${described} is not the key this database's webhook signing secrets were sealed with. Use the key it was used with ` +
      '(SECRETS_KEY, or the secrets.key file of the installation the data came from); on PostgreSQL every process needs the same key',
  );
}

/**
 * At start: refuses a key that does not open this database's secrets, records the check value when
 * there is none yet, and seals the secrets an older release stored in plain text. `described` names
 * the key in errors ("SECRETS_KEY", "the key file …"). Returns how many secrets it sealed.
 */
export async function prepareSealedSecrets(db: Kysely<Database>, box: SecretBox, sqlite: boolean, described: string): Promise<number> {
  if ((await keyVerdict(db, box)) === 'differs') throw wrongKey(described);
  // Another process may record its own check first: then that one must open with this key too.
  if (!box.opens(await setting(db, KEY_CHECK_SETTING, () => box.seal(KEY_CHECK_TEXT)))) throw wrongKey(described);
  const plain = (await storedSecrets(db)).filter((row) => row.secret.startsWith(PLAIN_PREFIX));
  if (plain.length === 0) return 0;
  await withSecureDelete(db, sqlite, () =>
    db.transaction().execute(async (trx) => {
      for (const row of plain) await resealSecret(trx, row.id, row.secret, box.seal(box.open(row.secret)));
    }),
  );
  return plain.length;
}

/** Seals every stored secret again under `to`, and the check value, in one transaction. Returns how many. */
export async function changeSecretsKey(db: Kysely<Database>, from: SecretBox, to: SecretBox, sqlite: boolean, described: string): Promise<number> {
  if ((await keyVerdict(db, from)) === 'differs') throw wrongKey(described);
  return withSecureDelete(db, sqlite, () =>
    db.transaction().execute(async (trx) => {
      const rows = await storedSecrets(trx);
      for (const row of rows) await resealSecret(trx, row.id, row.secret, to.seal(from.open(row.secret)));
      // Stored responses that hold a secret (an idempotent request's outcome) move to the new key with them.
      await resealOutcomes(trx, from, to);
      await writeSetting(trx, KEY_CHECK_SETTING, to.seal(KEY_CHECK_TEXT));
      return rows.length;
    }),
  );
}

/**
 * SQLite keeps the bytes of a replaced row in the page's free space until they are reused; with
 * secure_delete they are zeroed, so a secret replaced here leaves no plain or old-key copy in the
 * file.
 */
async function withSecureDelete<T>(db: Kysely<Database>, sqlite: boolean, work: () => Promise<T>): Promise<T> {
  if (!sqlite) return work();
  await sql`pragma secure_delete = on`.execute(db);
  try {
    return await work();
  } finally {
    await sql`pragma secure_delete = off`.execute(db);
  }
}
