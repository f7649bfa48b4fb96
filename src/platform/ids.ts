import { hash, randomBytes } from 'node:crypto';

/** Prefixed identifier with 128 random bits, URL-safe (docs/decisions.md: "HTTP contract"): `key_…`, `res_…`. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(16).toString('base64url')}`;
}

/** Prefixed secret with 256 random bits, shown once and stored only as its hash. */
export function newSecret(prefix: string): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

/** SHA-256, hex: how every bearer secret is stored and looked up (one-shot: half the cost of createHash). */
export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}
