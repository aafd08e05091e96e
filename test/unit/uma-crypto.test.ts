import { KeyUsageFlags } from '@peculiar/asn1-x509';
import { randomBytes, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { UmaConfig } from '../../src/config.js';
import { ManualClock } from '../../src/platform/clock.js';
import { AppError } from '../../src/platform/errors.js';
import { counterpartyKeys } from '../../src/modules/uma/counterparty.js';
import { newSecp256k1Key, type Secp256k1Key } from '../../src/modules/uma/certificates.js';
import type { VaspExchange } from '../../src/modules/uma/transport.js';
import { checkTimestamp, NonceCheck } from '../../src/modules/uma/verification.js';
import type { Db } from '../../src/platform/db/database.js';
import { testCertificate } from '../helpers/x509.js';

/**
 * A counterparty's /.well-known/lnurlpubkey, read by `counterpartyKeys` over a stub transport:
 * what of it is trusted (the chains, checked) and what is not (the bare key fields).
 */
const now = new Date('2026-06-01T12:00:00Z');
const notBefore = new Date(now.getTime() - 86_400_000);
const notAfter = new Date(now.getTime() + 86_400_000);

/** A certificate with the key usage the test names (undefined: no keyUsage extension), as hex DER. */
function certificate(subject: string, subjectKey: KeyObject, issuer: string, issuerKey: KeyObject, ca: boolean, keyUsage: number | undefined): string {
  return testCertificate({ subject, subjectKey, issuer, issuerKey, ca, keyUsage, notBefore, notAfter }).toString('hex');
}

interface ChainSpec {
  leafUsage?: number;
  rootUsage?: number;
}

const SIGNING = KeyUsageFlags.digitalSignature;
const ENCRYPTION = KeyUsageFlags.keyAgreement;
const CA = KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign;

/** Leaf first, then its root; usage as given (the default: what a CA issues for the purpose). */
function chain(leaf: Secp256k1Key, spec: ChainSpec & { purpose: number }): string[] {
  const root = newSecp256k1Key();
  const rootName = `root ${randomBytes(4).toString('hex')}`;
  return [
    certificate('leaf', leaf.publicKeyObject, rootName, root.keyObject, false, 'leafUsage' in spec ? spec.leafUsage : spec.purpose),
    certificate(rootName, root.publicKeyObject, rootName, root.keyObject, true, 'rootUsage' in spec ? spec.rootUsage : CA),
  ];
}

const config = { trustedRoots: [], timeoutMs: 1000, timestampWindowSeconds: 300, lookupTtlSeconds: 900 } as unknown as UmaConfig;

async function keysFrom(body: Record<string, unknown>) {
  const clock = new ManualClock(now);
  const send = async (_exchange: VaspExchange) => ({ ok: true as const, status: 200, body: JSON.stringify(body) });
  return counterpartyKeys({ clock, config, send }, 'vasp.example', { unreachable: 'LOOKUP_REQUEST_FAILED', explain: true });
}

async function refusal(body: Record<string, unknown>): Promise<AppError> {
  const error = await keysFrom(body).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof AppError)) throw new Error(`expected an AppError, got ${String(error)}`);
  return error;
}

describe("a counterparty's keys (counterpartyKeys)", () => {
  const signing = newSecp256k1Key();
  const encryption = newSecp256k1Key();
  const pubKeyHex = (key: Secp256k1Key) => key.publicKeyObject.export({ type: 'spki', format: 'der' }).subarray(-65).toString('hex');

  it('are taken from chains whose usages fit: the keys are the leaves’ own', async () => {
    const keys = await keysFrom({ signingCertChain: chain(signing, { purpose: SIGNING }), encryptionCertChain: chain(encryption, { purpose: ENCRYPTION }) });
    expect(Buffer.from(keys.getSigningPubKey()).toString('hex')).toBe(pubKeyHex(signing));
    expect(Buffer.from(keys.getEncryptionPubKey()).toString('hex')).toBe(pubKeyHex(encryption));
    // Certificates without a keyUsage extension restrict nothing (RFC 5280), as the UMA SDK's own test chains are made.
    await expect(keysFrom({ signingCertChain: chain(signing, { purpose: SIGNING, leafUsage: undefined, rootUsage: undefined }), encryptionCertChain: chain(encryption, { purpose: ENCRYPTION, leafUsage: undefined }) })).resolves.toBeDefined();
  });

  it('never an encryption key published bare, outside a checked chain: the payer data would go to a key no root vouches for', async () => {
    const error = await refusal({ signingCertChain: chain(signing, { purpose: SIGNING }), encryptionPubKey: pubKeyHex(newSecp256k1Key()) });
    expect(error.code).toBe('CERT_CHAIN_INVALID');
  });

  it('a signing leaf whose key usage does not allow signatures, or an issuer whose does not allow issuing, is CERT_CHAIN_INVALID', async () => {
    const encryptionCertChain = chain(encryption, { purpose: ENCRYPTION });
    expect((await refusal({ signingCertChain: chain(signing, { purpose: SIGNING, leafUsage: KeyUsageFlags.keyAgreement }), encryptionCertChain })).code).toBe('CERT_CHAIN_INVALID');
    expect((await refusal({ signingCertChain: chain(signing, { purpose: SIGNING, rootUsage: KeyUsageFlags.digitalSignature }), encryptionCertChain })).code).toBe('CERT_CHAIN_INVALID');
  });

  it('an encryption leaf whose key usage does not allow key agreement (ECIES) is CERT_CHAIN_INVALID', async () => {
    const error = await refusal({ signingCertChain: chain(signing, { purpose: SIGNING }), encryptionCertChain: chain(encryption, { purpose: ENCRYPTION, leafUsage: KeyUsageFlags.digitalSignature }) });
    expect(error.code).toBe('CERT_CHAIN_INVALID');
  });

  it('a chain longer than any CA hierarchy (the same root over and over) is CERT_CHAIN_INVALID, before its signatures are checked', async () => {
    const root = newSecp256k1Key();
    const self = certificate('self', root.publicKeyObject, 'self', root.keyObject, true, undefined);
    const error = await refusal({ signingCertChain: Array.from({ length: 40 }, () => self), encryptionCertChain: [self] });
    expect(error.code).toBe('CERT_CHAIN_INVALID');
  });

  it('a chain that is no array of certificates is CERT_CHAIN_INVALID, never a 500', async () => {
    for (const signingCertChain of ['30', [42], [{}], 'zz', [null]]) {
      expect((await refusal({ signingCertChain, encryptionCertChain: chain(encryption, { purpose: ENCRYPTION }) })).code).toBe('CERT_CHAIN_INVALID');
    }
  });
});

describe('a nonce (NonceCheck)', () => {
  it("holding '|' is INVALID_NONCE before anything is read: it would make a signed string read as another message's", async () => {
    // No database: the nonce is refused before it is looked up.
    const nonces = new NonceCheck({} as Db, new ManualClock(now), 300, 'vasp.example', true);
    // Corridor's lnurlp answer signs `$bob@d|123|<t>`: as a callback, nonce `$bob@d|123` and the same timestamp sign the same string.
    await expect(nonces.checkAndSaveNonce('$bob@corridor.example|123', now.getTime() / 1000)).rejects.toMatchObject({ code: 'INVALID_NONCE' });
    await expect(nonces.checkAndSaveNonce('|', now.getTime() / 1000)).rejects.toMatchObject({ code: 'INVALID_NONCE' });
  });
});

describe("a message's timestamp (checkTimestamp)", () => {
  it('is accepted up to the window on either side of now, and INVALID_TIMESTAMP one second beyond it', () => {
    const clock = new ManualClock(now);
    const nowSeconds = now.getTime() / 1000;
    for (const seconds of [nowSeconds - 300, nowSeconds + 300]) expect(() => checkTimestamp(seconds, clock, 300)).not.toThrow();
    for (const seconds of [nowSeconds - 301, nowSeconds + 301]) expect(() => checkTimestamp(seconds, clock, 300)).toThrow(expect.objectContaining({ code: 'INVALID_TIMESTAMP' }));
  });
});
