// The signing secret `listen` keeps across runs, one per server and account, in the user's
// configuration directory (files of mode 0600), so a receiver configured once keeps verifying.
// New ones are `whsec_` + standard base64 of 32 bytes, which Standard Webhooks libraries read; one
// kept from before (base64url) stays in use, and isStandardSecret tells listen to say so.
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/** Whether Standard Webhooks libraries read the secret: `whsec_` and standard base64 (a base64url `-` or `_` they refuse). */
export function isStandardSecret(secret: string): boolean {
  return /^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret);
}

/** `%APPDATA%\devdata` on Windows; `$XDG_CONFIG_HOME/devdata`, else `~/.config/devdata`, elsewhere. */
export function configDirectory(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  if (platform === 'win32') return join(env.APPDATA || join(homedir(), 'AppData', 'Roaming'), 'devdata');
  // The XDG specification ignores a relative path.
  const base = env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'devdata');
}

/** A file name for the server and account, safe on every system: `acc_1@http%3A%2F%2Flocalhost%3A8080`. */
function fileNameFor(baseUrl: string, accountId: string): string {
  return `${accountId}@${baseUrl}`.replace(/[^A-Za-z0-9@._-]/g, (character) =>
    [...Buffer.from(character)].map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
}

/** Where the secret of this server and account is kept. */
export function listenSecretPath(baseUrl: string, accountId: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(configDirectory(env), 'listen-secrets', fileNameFor(baseUrl, accountId));
}

function readSecret(path: string): string | undefined {
  try {
    const secret = readFileSync(path, 'utf8').trim();
    if (secret === '') throw new Error(`${path} is empty: delete it to make a new secret`);
    return secret;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * The kept secret, made and stored on first use. The file appears whole or not at all (written
 * aside, then linked into place, which fails if another run got there first: that one's is used).
 */
export function listenSecret(baseUrl: string, accountId: string, env: NodeJS.ProcessEnv = process.env): { secret: string; path: string; created: boolean } {
  const path = listenSecretPath(baseUrl, accountId, env);
  const kept = readSecret(path);
  if (kept !== undefined) return { secret: kept, path, created: false };
  mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 });
  // The Standard Webhooks form, as the service makes webhooks' secrets (api-decisions §14).
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const aside = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(aside, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(aside, path);
    return { secret, path, created: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { secret: readSecret(path) ?? secret, path, created: false };
  } finally {
    unlinkSync(aside);
  }
}
