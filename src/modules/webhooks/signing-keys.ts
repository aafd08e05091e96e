import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { NotifiedCache, notifyChanged } from '../../platform/cache.js';
import type { Clock } from '../../platform/clock.js';
import type { DbHandle, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { AppError } from '../../platform/errors.js';
import { generateP256 } from '../../platform/crypto/p256.js';
import { SecretBox } from '../../platform/crypto/secret-box.js';
import { formatId, uuidv7 } from '../../platform/ids.js';
import { insertSigningKey, listPublishedSigningKeys, retireSigningKeys, type SigningKeyRow } from './repo.js';
import type { SigningKey } from './schemas.js';

const KEYS_CHANGED_CHANNEL = 'corridor_webhook_keys_changed';
/**
 * Platforms whose key list, and whose opened signing key, one process keeps: a platform's
 * rotations replace its entries rather than add to them, and this bounds the platforms.
 */
export const KEPT_PLATFORMS = 1000;

export interface Signature {
  /** base64 ECDSA P-256 signature (DER) over SHA-256 of the exact body. */
  signature: string;
  keyId: string;
}

function keyStatus(row: SigningKeyRow, signing: SigningKeyRow | undefined): SigningKey['status'] {
  return row.id === signing?.id ? 'ACTIVE' : 'NEXT';
}

/**
 * Each platform's P-256 webhook signing keys. The first is made on first use; rotation adds
 * the next key, published at once and signing from the end of the overlap, when the old one
 * stops being published. Private keys are sealed under the master key; processes keep the
 * key list in a NotifiedCache, so a rotation reaches every process at once.
 */
export class WebhookSigningKeys {
  private readonly box: SecretBox;
  private readonly cache: NotifiedCache<SigningKeyRow[]>;
  /**
   * Each platform's opened signing key, by platform (in order of use, the most recent last): one
   * per platform however often it rotates, for at most KEPT_PLATFORMS platforms. A key never
   * changes once made, so an entry whose id is the signing key's is still that key.
   */
  private readonly opened = new Map<string, { id: string; key: KeyObject }>();

  constructor(
    private readonly handle: DbHandle,
    private readonly clock: Clock,
    masterKey: Buffer,
    cacheTtlMs: number,
  ) {
    this.box = new SecretBox(masterKey, 'webhook-signing-key');
    this.cache = new NotifiedCache(handle, KEYS_CHANGED_CHANNEL, cacheTtlMs, KEPT_PLATFORMS);
  }

  start(): Promise<void> {
    return this.cache.start();
  }

  private newKey(platformId: string, generation: number, activatesAt: Date): SigningKeyRow {
    const now = this.clock.now();
    const id = uuidv7(now.getTime());
    const pair = generateP256();
    const der = pair.privateKey.export({ format: 'der', type: 'pkcs8' });
    return {
      platform_id: platformId,
      id,
      generation,
      public_key: pair.publicKey.export({ format: 'pem', type: 'spki' }).toString(),
      sealed_private_key: this.box.seal(der, id),
      created_at: now,
      activates_at: activatesAt,
      retires_at: null,
    };
  }

  /** Published keys (not retired), creating the platform's first key when it has none. */
  private async keys(platformId: string): Promise<SigningKeyRow[]> {
    const now = this.clock.now();
    // Only the keys published when read are kept and read (every rotation leaves a retired key
    // behind): a platform rotating without end grows neither its entry nor a miss's read. One
    // retiring since the read is dropped here.
    const live = (rows: SigningKeyRow[]) => rows.filter((r) => !r.retires_at || r.retires_at > now);
    const cached = await this.cache.getOrLoad(platformId, async () => {
      const rows = await listPublishedSigningKeys(this.handle.db, platformId, now);
      return rows.length ? rows : undefined;
    });
    if (cached) return live(cached);
    await withTx(this.handle.db, async (trx) => {
      // Two processes may both see no key: the generation's uniqueness keeps exactly one.
      if (await insertSigningKey(trx, this.newKey(platformId, 1, this.clock.now()))) await notifyChanged(trx, KEYS_CHANGED_CHANNEL, platformId);
    });
    this.cache.evict(platformId);
    return listPublishedSigningKeys(this.handle.db, platformId, this.clock.now());
  }

  /** The key that signs now: the latest one whose activation has come. */
  private signingRow(rows: SigningKeyRow[]): SigningKeyRow | undefined {
    const now = this.clock.now().getTime();
    return rows.filter((r) => r.activates_at.getTime() <= now).at(-1);
  }

  async sign(platformId: string, body: string): Promise<Signature> {
    const row = this.signingRow(await this.keys(platformId));
    if (!row) throw new Error(`platform ${platformId} has no active webhook signing key`);
    const opened = this.opened.get(platformId);
    this.opened.delete(platformId);
    const key = opened?.id === row.id ? opened.key : createPrivateKey({ key: this.box.open(row.sealed_private_key, row.id), format: 'der', type: 'pkcs8' });
    this.opened.set(platformId, { id: row.id, key });
    if (this.opened.size > KEPT_PLATFORMS) this.opened.delete(this.opened.keys().next().value!);
    return { signature: sign('sha256', Buffer.from(body, 'utf8'), key).toString('base64'), keyId: formatId('WebhookSigningKey', row.id) };
  }

  async published(platformId: string): Promise<SigningKey[]> {
    const rows = await this.keys(platformId);
    const signing = this.signingRow(rows);
    return rows.map((row) => ({
      id: formatId('WebhookSigningKey', row.id),
      status: keyStatus(row, signing),
      algorithm: 'ECDSA_P256_SHA256' as const,
      publicKey: row.public_key,
      createdAt: row.created_at.toISOString(),
      activatesAt: row.activates_at.toISOString(),
      ...(row.retires_at ? { retiresAt: row.retires_at.toISOString() } : {}),
    }));
  }

  /**
   * Adds the next key: published now, signing after `overlapSeconds`, when the current key
   * retires. 0 switches at once (a suspected leak). Only one rotation may be pending at a time.
   * Every process learns of it on commit (NOTIFY); this one at once.
   */
  async rotate(platformId: string, overlapSeconds: number): Promise<void> {
    await this.keys(platformId);
    await withTx(this.handle.db, (trx) => this.addNextKey(trx, platformId, overlapSeconds));
    this.cache.evict(platformId);
  }

  private async addNextKey(trx: Tx, platformId: string, overlapSeconds: number): Promise<void> {
    const now = this.clock.now();
    // One read for both the pending check and the next generation (the newest key, never retired,
    // is among the published): read twice, a rotation that committed between the reads was missed
    // by the first and counted by the second, and this one added the generation after it (two
    // 200s, two pending keys) instead of colliding on its own.
    const published = await listPublishedSigningKeys(trx, platformId, now);
    const pending = published.find((r) => r.activates_at > now);
    if (pending && overlapSeconds > 0) {
      throw new AppError('CONFLICT', `A rotation is already under way: the next key signs from ${pending.activates_at.toISOString()}.`, {
        details: { nextKeyId: formatId('WebhookSigningKey', pending.id), activatesAt: pending.activates_at.toISOString() },
      });
    }
    const generation = (published.at(-1)?.generation ?? 0) + 1;
    const activatesAt = new Date(now.getTime() + overlapSeconds * 1000);
    const next = this.newKey(platformId, generation, activatesAt);
    if (!(await insertSigningKey(trx, next))) throw new AppError('CONFLICT', 'Another rotation of the signing key happened at the same time; read the keys and try again.');
    await retireSigningKeys(trx, platformId, next.id, activatesAt);
    await notifyChanged(trx, KEYS_CHANGED_CHANNEL, platformId);
  }

}
