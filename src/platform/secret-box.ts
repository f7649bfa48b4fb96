// Secrets the service must be able to read back (webhook signing secrets), encrypted at rest
// with AES-256-GCM under SECRETS_KEY. Without a key they are stored marked as plain text, so
// setting a key later still reads old values (and encrypts new ones).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export class SecretBox {
  constructor(private readonly key: Buffer | undefined) {}

  seal(secret: string): string {
    if (!this.key) return `plain:${secret}`;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return `enc:v1:${iv.toString('base64url')}:${cipher.getAuthTag().toString('base64url')}:${ciphertext.toString('base64url')}`;
  }

  open(sealed: string): string {
    if (sealed.startsWith('plain:')) return sealed.slice('plain:'.length);
    const [, version, iv, tag, ciphertext] = sealed.split(':');
    if (version !== 'v1' || iv === undefined || tag === undefined || ciphertext === undefined) throw new Error('unknown sealed secret format');
    if (!this.key) throw new Error('SECRETS_KEY is needed to read secrets stored encrypted');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  }
}
