/** DER ECDSA signatures taken apart and put back together, to make their other valid forms. */

/** The order of the P-256 group: s and n − s are both valid for the same signature. */
export const P256_ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

function derInteger(value: bigint): Buffer {
  let hex = value.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  const bytes = Buffer.from(hex, 'hex');
  const body = bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes;
  return Buffer.concat([Buffer.from([0x02, body.length]), body]);
}

export function derSignature(r: bigint, s: bigint): Buffer {
  const body = Buffer.concat([derInteger(r), derInteger(s)]);
  return Buffer.concat([Buffer.from([0x30, body.length]), body]);
}

export function splitDer(der: Buffer): { r: bigint; s: bigint } {
  const rLength = der[3]!;
  const r = der.subarray(4, 4 + rLength);
  const s = der.subarray(6 + rLength, 6 + rLength + der[5 + rLength]!);
  return { r: BigInt(`0x${r.toString('hex')}`), s: BigInt(`0x${s.toString('hex')}`) };
}

/** The high-S form of a signature (what Node's signer produces about half the time). */
export function highS(derHex: string): string {
  const { r, s } = splitDer(Buffer.from(derHex, 'hex'));
  return derSignature(r, s > P256_ORDER / 2n ? s : P256_ORDER - s).toString('hex');
}
