import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { base64url, fromBase64url } from './encoding.js';

export class SecretBoxError extends Error {}

const PREFIX = 'v1.';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM under a subkey per purpose, so a value sealed for one purpose never opens under
 * another even with the same aad. Random 96-bit nonces are safe well beyond the number of
 * values one subkey will seal.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(masterKey: Buffer, purpose: string) {
    if (masterKey.length !== 32) throw new SecretBoxError(`master key must be 32 bytes, got ${masterKey.length}`);
    this.key = Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), `corridor/${purpose}`, 32));
  }

  seal(plaintext: Buffer, aad: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce).setAAD(Buffer.from(aad, 'utf8'));
    return PREFIX + base64url(Buffer.concat([nonce, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]));
  }

  /** Throws SecretBoxError when the value was tampered with, or sealed under another key, purpose or aad. */
  open(sealed: string, aad: string): Buffer {
    if (!sealed.startsWith(PREFIX)) throw new SecretBoxError('sealed value has an unknown version');
    let raw: Buffer;
    try {
      raw = fromBase64url(sealed.slice(PREFIX.length));
    } catch {
      throw new SecretBoxError('sealed value is not base64url');
    }
    if (raw.length < NONCE_BYTES + TAG_BYTES) throw new SecretBoxError('sealed value is too short');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, NONCE_BYTES)).setAAD(Buffer.from(aad, 'utf8'));
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new SecretBoxError('sealed value cannot be opened: tampered, or sealed under another key or aad');
    }
  }
}

/**
 * Subkeys a TenantSecretBox keeps, the oldest dropped first: one per tenant and key version, so
 * without a bound a process serving many platforms, each of whose key rotations leaves its old
 * version's subkey behind, would hold them all. A dropped subkey is derived again (one HKDF).
 */
export const KEPT_SUBKEYS = 10_000;

/**
 * Secrets of many tenants, each sealed under a subkey of its own tenant and key version
 * (HKDF of the master key with `<purpose>/<tenant>/v<version>`): one tenant's key opens nothing
 * of another's, and a tenant's values are re-sealed under a new version to rotate its key.
 */
export class TenantSecretBox {
  private readonly boxes = new Map<string, SecretBox>();

  constructor(
    private readonly masterKey: Buffer,
    private readonly purpose: string,
  ) {
    if (masterKey.length !== 32) throw new SecretBoxError(`master key must be 32 bytes, got ${masterKey.length}`);
  }

  private box(tenantId: string, version: number): SecretBox {
    const name = `${this.purpose}/${tenantId}/v${version}`;
    let box = this.boxes.get(name);
    if (!box) {
      if (this.boxes.size >= KEPT_SUBKEYS) this.boxes.delete(this.boxes.keys().next().value!);
      this.boxes.set(name, (box = new SecretBox(this.masterKey, name)));
    }
    return box;
  }

  /** `aad` binds the value to its row, so a sealed value copied onto another row does not open. */
  seal(tenantId: string, version: number, plaintext: string, aad: string): string {
    return this.box(tenantId, version).seal(Buffer.from(plaintext, 'utf8'), aad);
  }

  open(tenantId: string, version: number, sealed: string, aad: string): string {
    return this.box(tenantId, version).open(sealed, aad).toString('utf8');
  }
}
