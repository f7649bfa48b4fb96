// Secrets the service must be able to read back (webhook signing secrets), encrypted at rest
// with AES-256-GCM under the secrets key (SECRETS_KEY or the service's key file, see
// secrets-key.ts). Releases before the key file stored them marked as plain text (`plain:…`): those
// still open, and are sealed at the next start (sealed-secrets.ts).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export const PLAIN_PREFIX = 'plain:';

export class SecretBox {
  /** `key` undefined: a box for commands that never touch secrets; sealing or opening a sealed secret throws. */
  constructor(private readonly key: Buffer | undefined) {}

  seal(secret: string): string {
    if (!this.key) throw new Error('no secrets key is loaded, so no secret can be sealed');
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return `enc:v1:${iv.toString('base64url')}:${cipher.getAuthTag().toString('base64url')}:${ciphertext.toString('base64url')}`;
  }

  open(sealed: string): string {
    if (sealed.startsWith(PLAIN_PREFIX)) return sealed.slice(PLAIN_PREFIX.length);
    const [, version, iv, tag, ciphertext] = sealed.split(':');
    if (version !== 'v1' || iv === undefined || tag === undefined || ciphertext === undefined) throw new Error('unknown sealed secret format');
    if (!this.key) throw new Error('the secrets key is needed to read secrets stored encrypted');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** Whether `sealed` opens with this box's key (plain text always does). */
  opens(sealed: string): boolean {
    try {
      this.open(sealed);
      return true;
    } catch {
      return false;
    }
  }
}
