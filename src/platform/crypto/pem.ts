import { X509Certificate } from 'node:crypto';

export const PEM_BEGIN = '-----BEGIN CERTIFICATE-----';
export const PEM_END = '-----END CERTIFICATE-----';

/** DER → one PEM certificate block, 64 base64 characters a line. */
export function toPem(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g)!.join('\n');
  return `${PEM_BEGIN}\n${lines}\n${PEM_END}\n`;
}

/** A PEM bundle's certificates, in order; throws on a block that is not an X.509 certificate. */
export function certificatesFromPem(pem: string): X509Certificate[] {
  // Each END marker closes the block its nearest BEGIN opened; text between blocks is ignored, as
  // PEM allows. Split by marker, not matched by a lazy regex, which rescans the rest of the text
  // from every BEGIN that no END follows (quadratic).
  return pem
    .split(PEM_END)
    .slice(0, -1)
    .filter((head) => head.includes(PEM_BEGIN))
    .map((head) => new X509Certificate(`${head.slice(head.lastIndexOf(PEM_BEGIN))}${PEM_END}`));
}
