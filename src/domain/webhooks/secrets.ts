// Webhook signing secrets: made here, shown once, stored sealed (AES-256-GCM under the instance's webhook key,
// which the database never holds), and opened only to sign. The signature is Standard Webhooks' (the
// `standardwebhooks` package signs exactly as its `verify` checks).
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

const PREFIX = 'whsec_';
const KEY_ID_BYTES = 8;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A new secret as Standard Webhooks writes it: whsec_ and 32 random bytes in base64. */
export const newSecret = (): string => `${PREFIX}${randomBytes(32).toString('base64')}`;

/** Seals and opens secrets with one 32-byte key, fetched once when first needed. */
export class SecretBox {
  private key: Promise<{ key: Buffer; id: Buffer }> | null = null;

  constructor(private readonly loadKey: () => Promise<Buffer>) {}

  private keyed() {
    this.key ??= this.loadKey().then((key) => {
      if (key.length !== 32) throw new Error('The webhook key must be 32 bytes.');
      return { key, id: createHash('sha256').update(key).digest().subarray(0, KEY_ID_BYTES) };
    });
    return this.key;
  }

  async seal(secret: string): Promise<Buffer> {
    const { key, id } = await this.keyed();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return Buffer.concat([id, iv, cipher.getAuthTag(), sealed]);
  }

  /** The secret, or null when it was sealed under another key (an instance configured with a different one). */
  async open(sealed: Buffer): Promise<string | null> {
    const { key, id } = await this.keyed();
    if (!sealed.subarray(0, KEY_ID_BYTES).equals(id)) return null;
    const iv = sealed.subarray(KEY_ID_BYTES, KEY_ID_BYTES + IV_BYTES);
    const tag = sealed.subarray(KEY_ID_BYTES + IV_BYTES, KEY_ID_BYTES + IV_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    decipher.setAuthTag(tag);
    const body = sealed.subarray(KEY_ID_BYTES + IV_BYTES + TAG_BYTES);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  }
}

/** The webhook-signature header: one `v1,<signature>` per secret, space-separated (a rotation's overlap). */
export function signatureHeader(secrets: string[], messageId: string, at: Date, payload: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(messageId, at, payload)).join(' ');
}
