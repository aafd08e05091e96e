import { getPubKeyResponse } from '@uma-sdk/core';
import { ConfigError, type UmaConfig } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import { SecretBox } from '../../platform/crypto/secret-box.js';
import type { Db } from '../../platform/db/database.js';
import { certificatesFromPem } from '../../platform/crypto/pem.js';
import { secp256k1Key, selfSignedChains, type Secp256k1Key } from './certificates.js';
import { findVaspKeys, insertVaspKeys } from './repo.js';

/** The deployment's UMA identity: the keys it signs and decrypts with, and the chains it publishes. */
export interface VaspKeys {
  signing: Secp256k1Key;
  encryption: Secp256k1Key;
  signingChainPem: string;
  encryptionChainPem: string;
  /** What /.well-known/lnurlpubkey answers (UMAD-10): each chain as hex DER, leaf first. */
  published: { signingCertChain: string[]; encryptionCertChain: string[]; signingPubKey: string; encryptionPubKey: string };
}

function fromPem(signingChainPem: string, signingKey: Buffer, encryptionChainPem: string, encryptionKey: Buffer): VaspKeys {
  // The SDK derives the public keys from the leaves, as a counterparty will.
  const response = getPubKeyResponse({ signingCertChainPem: signingChainPem, encryptionCertChainPem: encryptionChainPem });
  const signing = secp256k1Key(signingKey);
  const encryption = secp256k1Key(encryptionKey);
  const signingPubKey = Buffer.from(response.getSigningPubKey());
  const encryptionPubKey = Buffer.from(response.getEncryptionPubKey());
  if (!signingPubKey.equals(signing.publicKeyObject.export({ type: 'spki', format: 'der' }).subarray(-65))) {
    throw new ConfigError('CORRIDOR_UMA_SIGNING_PRIVATE_KEY does not belong to the leaf of CORRIDOR_UMA_SIGNING_CERT_CHAIN');
  }
  if (!encryptionPubKey.equals(encryption.publicKeyObject.export({ type: 'spki', format: 'der' }).subarray(-65))) {
    throw new ConfigError('CORRIDOR_UMA_ENCRYPTION_PRIVATE_KEY does not belong to the leaf of CORRIDOR_UMA_ENCRYPTION_CERT_CHAIN');
  }
  return {
    signing,
    encryption,
    signingChainPem,
    encryptionChainPem,
    published: {
      signingCertChain: certificatesFromPem(signingChainPem).map((c) => c.raw.toString('hex')),
      encryptionCertChain: certificatesFromPem(encryptionChainPem).map((c) => c.raw.toString('hex')),
      signingPubKey: signingPubKey.toString('hex'),
      encryptionPubKey: encryptionPubKey.toString('hex'),
    },
  };
}

/** Where the deployment's keys come from: asked on every use, loaded once. */
export type VaspKeySource = () => Promise<VaspKeys>;

/**
 * Configured keys when there are (production: a chain from the operator's CA), checked at
 * start; else the deployment's own, made on first use: a self-signed chain in the database with
 * its private keys sealed under the master key. Every process of a deployment loads the same row
 * (the first to insert it wins).
 */
export function vaspKeySource(db: Db, clock: Clock, config: UmaConfig, masterKey: Buffer): VaspKeySource {
  if (config.signing && config.encryption) {
    let configured: VaspKeys;
    try {
      configured = fromPem(config.signing.certChainPem, Buffer.from(config.signing.privateKeyHex, 'hex'), config.encryption.certChainPem, Buffer.from(config.encryption.privateKeyHex, 'hex'));
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      throw new ConfigError(`the configured UMA certificates cannot be used: ${error instanceof Error ? error.message : String(error)}`);
    }
    return () => Promise.resolve(configured);
  }
  let loading: Promise<VaspKeys> | undefined;
  return () => {
    loading ??= loadStoredKeys(db, clock, masterKey).catch((error: unknown) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}

async function loadStoredKeys(db: Db, clock: Clock, masterKey: Buffer): Promise<VaspKeys> {
  const box = new SecretBox(masterKey, 'uma-vasp-keys');
  let row = await findVaspKeys(db);
  if (!row) {
    const made = selfSignedChains('Corridor', clock.now());
    await insertVaspKeys(db, {
      id: 'default',
      signing_cert_chain: made.signing.chainPem,
      signing_key_sealed: box.seal(made.signing.key.privateKey, 'signing'),
      encryption_cert_chain: made.encryption.chainPem,
      encryption_key_sealed: box.seal(made.encryption.key.privateKey, 'encryption'),
      created_at: clock.now(),
    });
    row = (await findVaspKeys(db))!;
  }
  return fromPem(row.signing_cert_chain, box.open(row.signing_key_sealed, 'signing'), row.encryption_cert_chain, box.open(row.encryption_key_sealed, 'encryption'));
}
