import { ecdsaWithSHA256 } from '@peculiar/asn1-ecc';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import {
  AttributeTypeAndValue,
  AttributeValue,
  BasicConstraints,
  Certificate,
  Extension,
  Extensions,
  id_ce_basicConstraints,
  id_ce_keyUsage,
  KeyUsage,
  Name,
  RelativeDistinguishedName,
  SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  Version,
} from '@peculiar/asn1-x509';
import { randomBytes, sign, type KeyObject } from 'node:crypto';

export interface TestCertificateSpec {
  subject: string;
  subjectKey: KeyObject;
  issuer: string;
  /** The issuer's private key (ECDSA), which signs the certificate. */
  issuerKey: KeyObject;
  /** basicConstraints cA. */
  ca: boolean;
  /** KeyUsageFlags; undefined: no keyUsage extension. */
  keyUsage: number | undefined;
  notBefore: Date;
  notAfter: Date;
}

const commonName = (cn: string) => new Name([new RelativeDistinguishedName([new AttributeTypeAndValue({ type: '2.5.4.3', value: new AttributeValue({ utf8String: cn }) })])]);

/**
 * An X.509 v3 certificate (DER) with exactly the CA flag, key usage and validity a test names:
 * the chains a counterparty VASP could publish, including ones Corridor must refuse, which no
 * certificate tool would issue on request.
 */
export function testCertificate(spec: TestCertificateSpec): Buffer {
  const extensions = [new Extension({ extnID: id_ce_basicConstraints, critical: true, extnValue: new OctetString(AsnConvert.serialize(new BasicConstraints({ cA: spec.ca }))) })];
  if (spec.keyUsage !== undefined) extensions.push(new Extension({ extnID: id_ce_keyUsage, critical: true, extnValue: new OctetString(AsnConvert.serialize(new KeyUsage(spec.keyUsage))) }));
  const tbs = new TBSCertificate({
    version: Version.v3,
    serialNumber: Uint8Array.from([0x01, ...randomBytes(15)]).buffer,
    signature: ecdsaWithSHA256,
    issuer: commonName(spec.issuer),
    validity: new Validity({ notBefore: spec.notBefore, notAfter: spec.notAfter }),
    subject: commonName(spec.subject),
    subjectPublicKeyInfo: AsnConvert.parse(spec.subjectKey.export({ type: 'spki', format: 'der' }), SubjectPublicKeyInfo),
    extensions: new Extensions(extensions),
  });
  const signature = sign('sha256', Buffer.from(AsnConvert.serialize(tbs)), spec.issuerKey);
  return Buffer.from(AsnConvert.serialize(new Certificate({ tbsCertificate: tbs, signatureAlgorithm: ecdsaWithSHA256, signatureValue: Uint8Array.from(signature).buffer })));
}
