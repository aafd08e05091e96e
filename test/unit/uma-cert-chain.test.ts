import { KeyUsageFlags } from '@peculiar/asn1-x509';
import { X509Certificate, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newSecp256k1Key, selfSignedChains, verifyChain } from '../../src/modules/uma/certificates.js';
import { certificatesFromPem } from '../../src/platform/crypto/pem.js';
import { testCertificate } from '../helpers/x509.js';

/**
 * A counterparty's certificate chain (verifyChain) at the edges uma-crypto.test.ts does not
 * reach: an issuer that is no CA though its key usage allows issuing, a chain not yet valid, and
 * a signing leaf whose key usage is nonRepudiation (contentCommitment) alone.
 */

const now = new Date('2026-06-01T12:00:00Z');

function certificate(subject: string, subjectKey: KeyObject, issuer: string, issuerKey: KeyObject, ca: boolean, keyUsage: number): X509Certificate {
  const validity = { notBefore: new Date(now.getTime() - 86_400_000), notAfter: new Date(now.getTime() + 86_400_000) };
  return new X509Certificate(testCertificate({ subject, subjectKey, issuer, issuerKey, ca, keyUsage, ...validity }));
}

const ISSUING = KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign;

/** A leaf with `leafUsage` issued by a self-signed root that is a CA or not. */
function chain(leafUsage: number, rootIsCa: boolean): X509Certificate[] {
  const root = newSecp256k1Key();
  const leaf = newSecp256k1Key();
  return [certificate('leaf', leaf.publicKeyObject, 'root', root.keyObject, false, leafUsage), certificate('root', root.publicKeyObject, 'root', root.keyObject, rootIsCa, ISSUING)];
}

describe('verifyChain', () => {
  it('an issuer that is no CA (basicConstraints cA false) is CERT_CHAIN_INVALID, though its key usage allows issuing', () => {
    expect(() => verifyChain(chain(KeyUsageFlags.digitalSignature, true), now, [], 'signing')).not.toThrow();
    expect(() => verifyChain(chain(KeyUsageFlags.digitalSignature, false), now, [], 'signing')).toThrow(expect.objectContaining({ code: 'CERT_CHAIN_INVALID' }));
  });

  it('a signing leaf whose key usage is nonRepudiation alone may sign', () => {
    expect(() => verifyChain(chain(KeyUsageFlags.nonRepudiation, true), now, [], 'signing')).not.toThrow();
    expect(() => verifyChain(chain(KeyUsageFlags.keyAgreement, true), now, [], 'signing')).toThrow(expect.objectContaining({ code: 'CERT_CHAIN_INVALID' }));
  });

  it('a chain not yet valid is CERT_CHAIN_EXPIRED, as one past its end is', () => {
    const pem = (at: Date) => certificatesFromPem(selfSignedChains('vasp.example', at, 30).signing.chainPem);
    expect(() => verifyChain(pem(now), now, [], 'signing')).not.toThrow();
    expect(() => verifyChain(pem(new Date(now.getTime() + 86_400_000)), now, [], 'signing')).toThrow(expect.objectContaining({ code: 'CERT_CHAIN_EXPIRED' }));
    expect(() => verifyChain(pem(new Date(now.getTime() - 31 * 86_400_000)), now, [], 'signing')).toThrow(expect.objectContaining({ code: 'CERT_CHAIN_EXPIRED' }));
  });

  it('is valid at its first and its last second themselves (RFC 5280: notBefore and notAfter included)', () => {
    const certificates = certificatesFromPem(selfSignedChains('vasp.example', now, 30).signing.chainPem);
    const from = new Date(certificates[0]!.validFrom);
    const to = new Date(certificates[0]!.validTo);
    expect(to.getTime() - from.getTime()).toBe(30 * 86_400_000 + 60_000);
    expect(() => verifyChain(certificates, from, [], 'signing')).not.toThrow();
    expect(() => verifyChain(certificates, to, [], 'signing')).not.toThrow();
    expect(() => verifyChain(certificates, new Date(to.getTime() + 1000), [], 'signing')).toThrow(expect.objectContaining({ code: 'CERT_CHAIN_EXPIRED' }));
  });
});
