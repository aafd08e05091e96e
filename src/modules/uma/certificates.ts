import type * as Asn1Ecc from '@peculiar/asn1-ecc';
import type * as Asn1Schema from '@peculiar/asn1-schema';
import type * as Asn1X509 from '@peculiar/asn1-x509';
import { createECDH, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { toPem } from '../../platform/crypto/pem.js';
import { AppError } from '../../platform/errors.js';
import { loadOnFirstUse } from '../../platform/load-on-first-use.js';

// The ASN.1 libraries issue Corridor's own certificates and read counterparties' key usage: loaded on first use, not at every start.
const asn1Ecc = loadOnFirstUse<typeof Asn1Ecc>('@peculiar/asn1-ecc');
const asn1Schema = loadOnFirstUse<typeof Asn1Schema>('@peculiar/asn1-schema');
const asn1X509 = loadOnFirstUse<typeof Asn1X509>('@peculiar/asn1-x509');

/** A secp256k1 key pair: UMA signs with ECDSA over secp256k1 and encrypts with ECIES on the same curve. */
export interface Secp256k1Key {
  /** The raw 32-byte scalar, as the UMA SDK takes it. */
  privateKey: Buffer;
  keyObject: KeyObject;
  publicKeyObject: KeyObject;
}

export function secp256k1Key(privateKey: Buffer): Secp256k1Key {
  const ecdh = createECDH('secp256k1');
  ecdh.setPrivateKey(privateKey);
  const point = ecdh.getPublicKey();
  const jwk = {
    kty: 'EC',
    crv: 'secp256k1',
    d: privateKey.toString('base64url'),
    x: point.subarray(1, 33).toString('base64url'),
    y: point.subarray(33, 65).toString('base64url'),
  };
  const keyObject = createPrivateKey({ key: jwk, format: 'jwk' });
  return { privateKey, keyObject, publicKeyObject: createPublicKey(keyObject) };
}

export function newSecp256k1Key(): Secp256k1Key {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'secp256k1' });
  return secp256k1Key(Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url'));
}

function name(commonName: string): Asn1X509.Name {
  const { AttributeTypeAndValue, AttributeValue, Name, RelativeDistinguishedName } = asn1X509();
  return new Name([new RelativeDistinguishedName([new AttributeTypeAndValue({ type: '2.5.4.3', value: new AttributeValue({ utf8String: commonName }) })])]);
}

export interface CertificateSpec {
  subject: string;
  subjectKey: KeyObject;
  issuer: string;
  issuerKey: KeyObject;
  notBefore: Date;
  notAfter: Date;
  ca: boolean;
}

/** One X.509 v3 certificate, ECDSA-SHA256, DER; the ASN.1 is built by @peculiar/asn1-x509 and signed by node:crypto. */
export function issueCertificate(spec: CertificateSpec): Buffer {
  const { ecdsaWithSHA256 } = asn1Ecc();
  const { AsnConvert, OctetString } = asn1Schema();
  const { BasicConstraints, Certificate, Extension, Extensions, id_ce_basicConstraints, id_ce_keyUsage, KeyUsage, KeyUsageFlags, SubjectPublicKeyInfo, TBSCertificate, Validity, Version } = asn1X509();
  const keyUsage = spec.ca ? KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign : KeyUsageFlags.digitalSignature | KeyUsageFlags.keyAgreement;
  const tbs = new TBSCertificate({
    version: Version.v3,
    // Positive 16-byte serial: the first byte's high bit cleared.
    serialNumber: Uint8Array.from([0x01, ...randomBytes(15)]).buffer,
    signature: ecdsaWithSHA256,
    issuer: name(spec.issuer),
    validity: new Validity({ notBefore: spec.notBefore, notAfter: spec.notAfter }),
    subject: name(spec.subject),
    subjectPublicKeyInfo: AsnConvert.parse(spec.subjectKey.export({ type: 'spki', format: 'der' }), SubjectPublicKeyInfo),
    extensions: new Extensions([
      new Extension({ extnID: id_ce_basicConstraints, critical: true, extnValue: new OctetString(AsnConvert.serialize(new BasicConstraints({ cA: spec.ca }))) }),
      new Extension({ extnID: id_ce_keyUsage, critical: true, extnValue: new OctetString(AsnConvert.serialize(new KeyUsage(keyUsage))) }),
    ]),
  });
  const tbsDer = Buffer.from(AsnConvert.serialize(tbs));
  const signature = sign('sha256', tbsDer, spec.issuerKey);
  const certificate = new Certificate({ tbsCertificate: tbs, signatureAlgorithm: ecdsaWithSHA256, signatureValue: Uint8Array.from(signature).buffer });
  return Buffer.from(AsnConvert.serialize(certificate));
}

export interface SelfSignedChains {
  signing: { key: Secp256k1Key; chainPem: string };
  encryption: { key: Secp256k1Key; chainPem: string };
}

/**
 * A root made for this deployment issues one leaf for signing and one for encryption; the
 * root's private key is dropped once both are issued, so nothing can issue under it again.
 */
export function selfSignedChains(domain: string, now: Date, validDays = 3650): SelfSignedChains {
  const root = newSecp256k1Key();
  const notBefore = new Date(now.getTime() - 60_000);
  const notAfter = new Date(now.getTime() + validDays * 86_400_000);
  const rootName = `Corridor UMA root (${domain})`;
  const rootDer = issueCertificate({ subject: rootName, subjectKey: root.publicKeyObject, issuer: rootName, issuerKey: root.keyObject, notBefore, notAfter, ca: true });
  const leaf = (use: string) => {
    const key = newSecp256k1Key();
    const der = issueCertificate({ subject: `Corridor UMA ${use} (${domain})`, subjectKey: key.publicKeyObject, issuer: rootName, issuerKey: root.keyObject, notBefore, notAfter, ca: false });
    return { key, chainPem: toPem(der) + toPem(rootDer) };
  };
  return { signing: leaf('signing'), encryption: leaf('encryption') };
}

/** Longer than any CA hierarchy: a chain past it is refused before a signature of it is checked. */
export const MAX_CHAIN_LENGTH = 10;

/** What a chain's leaf key is for: UMA signs with one (ECDSA) and encrypts payer data to the other (ECIES, a key agreement). */
export type LeafPurpose = 'signing' | 'encryption';

export function parseChain(chain: X509Certificate[] | undefined, purpose: LeafPurpose): X509Certificate[] {
  if (!chain || chain.length === 0) throw new AppError('CERT_CHAIN_INVALID', `The counterparty published no ${purpose} certificate chain.`);
  if (chain.length > MAX_CHAIN_LENGTH) throw new AppError('CERT_CHAIN_INVALID', `The counterparty's ${purpose} chain has ${chain.length} certificates; at most ${MAX_CHAIN_LENGTH} are read.`);
  return chain;
}

/**
 * The keyUsage bits of a certificate (KeyUsageFlags), or undefined when it has no keyUsage
 * extension, which restricts nothing (RFC 5280 4.2.1.3). Node reads only extendedKeyUsage.
 */
function keyUsageOf(certificate: X509Certificate): number | undefined {
  const { AsnConvert } = asn1Schema();
  const { Certificate, id_ce_keyUsage, KeyUsage } = asn1X509();
  try {
    const extension = AsnConvert.parse(certificate.raw, Certificate).tbsCertificate.extensions?.find((e) => e.extnID === id_ce_keyUsage);
    return extension ? AsnConvert.parse(extension.extnValue, KeyUsage).toNumber() : undefined;
  } catch {
    // Node read it; an extension that does not decode is no usage to trust, and no 500.
    throw new AppError('CERT_CHAIN_INVALID', `A certificate of the counterparty's chain cannot be read (${certificate.subject.replace(/\n/g, ', ')}).`);
  }
}

/** Whether a certificate's key may do what the chain uses it for: issue the one before it, or be the leaf's signing or key-agreement key. */
function usageAllows(certificate: X509Certificate, use: LeafPurpose | 'issuing'): boolean {
  const usage = keyUsageOf(certificate);
  if (usage === undefined) return true;
  const { KeyUsageFlags } = asn1X509();
  const needed = { issuing: KeyUsageFlags.keyCertSign, signing: KeyUsageFlags.digitalSignature | KeyUsageFlags.nonRepudiation, encryption: KeyUsageFlags.keyAgreement }[use];
  return (usage & needed) !== 0;
}

/**
 * Checks a counterparty's chain (leaf first): each certificate issued and signed by the next,
 * the last one self-signed (and one of the configured roots, when there are any), every one
 * valid at `now`, the issuers' key usage allowing certificate signing and the leaf's its
 * purpose (when they name a key usage), and the leaf's key on secp256k1, the only curve UMA
 * signs and encrypts with.
 */
export function verifyChain(chain: X509Certificate[], now: Date, trustedRoots: X509Certificate[], purpose: LeafPurpose): void {
  for (let index = 0; index < chain.length; index++) {
    const certificate = chain[index]!;
    const issuer = chain[index + 1] ?? certificate;
    // Names compared as Node prints them; the signature is what binds the two.
    if (certificate.issuer !== issuer.subject || !certificate.verify(issuer.publicKey)) {
      throw new AppError('CERT_CHAIN_INVALID', `Certificate ${index} of the counterparty's chain is not signed by the next one (${certificate.subject.replace(/\n/g, ', ')}).`);
    }
    if (index > 0 && !certificate.ca) throw new AppError('CERT_CHAIN_INVALID', `Certificate ${index} of the counterparty's chain issues certificates but is not a CA.`);
    // The leaf's usage is its purpose's (below), even when it signs itself.
    if (index > 0 && !usageAllows(certificate, 'issuing')) {
      throw new AppError('CERT_CHAIN_INVALID', `Certificate ${index} of the counterparty's chain issues certificates but its key usage does not allow it.`);
    }
  }
  for (const [index, certificate] of chain.entries()) {
    const from = new Date(certificate.validFrom);
    const to = new Date(certificate.validTo);
    if (now < from || now > to) {
      throw new AppError('CERT_CHAIN_EXPIRED', `Certificate ${index} of the counterparty's chain is valid from ${from.toISOString()} to ${to.toISOString()}.`, {
        details: { validFrom: from.toISOString(), validTo: to.toISOString() },
      });
    }
  }
  const root = chain[chain.length - 1]!;
  if (trustedRoots.length > 0 && !trustedRoots.some((trusted) => trusted.raw.equals(root.raw))) {
    throw new AppError('CERT_CHAIN_INVALID', "The counterparty's chain does not end at a trusted root.");
  }
  const key = chain[0]!.publicKey;
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'secp256k1') {
    throw new AppError('INVALID_PUBKEY_FORMAT', "The counterparty's key is not a secp256k1 key.");
  }
  if (!usageAllows(chain[0]!, purpose)) {
    throw new AppError('CERT_CHAIN_INVALID', `The leaf of the counterparty's ${purpose} chain has a key usage that does not allow ${purpose === 'signing' ? 'signatures' : 'key agreement'}.`);
  }
}
