import { getPubKeyResponse } from '@uma-sdk/core';
import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { certificatesFromPem } from '../../src/platform/crypto/pem.js';
import { selfSignedChains, verifyChain } from '../../src/modules/uma/certificates.js';
import { vaspKeySource } from '../../src/modules/uma/keys.js';
import { ManualClock } from '../../src/platform/clock.js';
import type { Db } from '../../src/platform/db/database.js';

const masterKey = Buffer.alloc(32, 7);
const noDatabase = {} as Db; // configured keys never touch it

function configured() {
  const chains = selfSignedChains('pay.example.com', new Date());
  return {
    chains,
    env: {
      CORRIDOR_UMA_SIGNING_CERT_CHAIN: chains.signing.chainPem.replace(/\n/g, '\\n'),
      CORRIDOR_UMA_SIGNING_PRIVATE_KEY: chains.signing.key.privateKey.toString('hex'),
      CORRIDOR_UMA_ENCRYPTION_CERT_CHAIN: chains.encryption.chainPem,
      CORRIDOR_UMA_ENCRYPTION_PRIVATE_KEY: chains.encryption.key.privateKey.toString('hex'),
    },
  };
}

describe('UMA certificates', () => {
  it('makes a chain Node reads: a CA root and a secp256k1 leaf it signed, in date', () => {
    const { signing } = selfSignedChains('pay.example.com', new Date());
    const [leaf, root] = certificatesFromPem(signing.chainPem) as [X509Certificate, X509Certificate];
    expect(root.ca).toBe(true);
    expect(leaf.ca).toBe(false);
    expect(leaf.verify(root.publicKey)).toBe(true);
    expect(leaf.publicKey.asymmetricKeyDetails?.namedCurve).toBe('secp256k1');
    expect(() => verifyChain([leaf, root], new Date(), [], 'signing')).not.toThrow();
    expect(() => verifyChain([leaf, root], new Date(), [certificatesFromPem(selfSignedChains('other', new Date()).signing.chainPem)[1]!], 'signing')).toThrow(
      expect.objectContaining({ code: 'CERT_CHAIN_INVALID' }),
    );
  });

  it('CORRIDOR_UMA_TRUSTED_ROOTS is read once, at start, into the roots a chain must end at', () => {
    const { signing } = selfSignedChains('pay.example.com', new Date());
    const [leaf, root] = certificatesFromPem(signing.chainPem) as [X509Certificate, X509Certificate];
    const other = selfSignedChains('other', new Date()).signing.chainPem;
    const roots = loadConfig({ CORRIDOR_UMA_TRUSTED_ROOTS: other.replace(/\n/g, '\\n') }).uma.trustedRoots!;
    expect(roots.map((c) => c.fingerprint256)).toEqual(certificatesFromPem(other).map((c) => c.fingerprint256));
    expect(() => verifyChain([leaf, root], new Date(), roots, 'signing')).toThrow(expect.objectContaining({ code: 'CERT_CHAIN_INVALID' }));
    const own = loadConfig({ CORRIDOR_UMA_TRUSTED_ROOTS: signing.chainPem }).uma.trustedRoots!;
    expect(() => verifyChain([leaf, root], new Date(), own, 'signing')).not.toThrow();
  });
});

describe('configured UMA keys', () => {
  it('are served as configured, PEM with \\n escapes accepted', async () => {
    const { chains, env } = configured();
    const keys = await vaspKeySource(noDatabase, new ManualClock(), loadConfig(env).uma, masterKey)();
    const expected = getPubKeyResponse({ signingCertChainPem: chains.signing.chainPem, encryptionCertChainPem: chains.encryption.chainPem });
    expect(keys.published.signingPubKey).toBe(Buffer.from(expected.getSigningPubKey()).toString('hex'));
    expect(keys.published.encryptionPubKey).toBe(Buffer.from(expected.getEncryptionPubKey()).toString('hex'));
    expect(keys.signing.privateKey.equals(chains.signing.key.privateKey)).toBe(true);
  });

  it('stop start-up when a key does not belong to its leaf, or one half is missing', () => {
    const { env } = configured();
    const other = configured();
    const swapped = loadConfig({ ...env, CORRIDOR_UMA_SIGNING_PRIVATE_KEY: other.env.CORRIDOR_UMA_SIGNING_PRIVATE_KEY }).uma;
    expect(() => vaspKeySource(noDatabase, new ManualClock(), swapped, masterKey)).toThrow(/does not belong to the leaf/);
    const swappedEncryption = loadConfig({ ...env, CORRIDOR_UMA_ENCRYPTION_PRIVATE_KEY: other.env.CORRIDOR_UMA_ENCRYPTION_PRIVATE_KEY }).uma;
    expect(() => vaspKeySource(noDatabase, new ManualClock(), swappedEncryption, masterKey)).toThrow(/CORRIDOR_UMA_ENCRYPTION_PRIVATE_KEY does not belong to the leaf/);
    expect(() => loadConfig({ CORRIDOR_UMA_SIGNING_CERT_CHAIN: env.CORRIDOR_UMA_SIGNING_CERT_CHAIN })).toThrow(ConfigError);
    expect(() => loadConfig({ CORRIDOR_UMA_SIGNING_CERT_CHAIN: env.CORRIDOR_UMA_SIGNING_CERT_CHAIN, CORRIDOR_UMA_SIGNING_PRIVATE_KEY: env.CORRIDOR_UMA_SIGNING_PRIVATE_KEY })).toThrow(
      /configured together/,
    );
    expect(() => loadConfig({ ...env, CORRIDOR_UMA_SIGNING_PRIVATE_KEY: 'zz' })).toThrow(/64 hex/);
    expect(() => loadConfig({ CORRIDOR_UMA_TRUSTED_ROOTS: 'not pem' })).toThrow(/PEM/);
  });
});
