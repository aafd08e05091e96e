import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

/** A minimal CBOR encoder (RFC 8949): what an authenticator needs for attestation objects and COSE keys. */
export function cbor(value: unknown): Buffer {
  const head = (major: number, length: number): Buffer => {
    if (length < 24) return Buffer.from([(major << 5) | length]);
    if (length < 0x100) return Buffer.from([(major << 5) | 24, length]);
    if (length < 0x10000) return Buffer.from([(major << 5) | 25, length >> 8, length & 0xff]);
    const b = Buffer.alloc(5);
    b[0] = (major << 5) | 26;
    b.writeUInt32BE(length, 1);
    return b;
  };
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === 'string') return Buffer.concat([head(3, Buffer.byteLength(value)), Buffer.from(value)]);
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return Buffer.concat([head(2, value.length), Buffer.from(value)]);
  if (Array.isArray(value)) return Buffer.concat([head(4, value.length), ...value.map(cbor)]);
  if (value instanceof Map) return Buffer.concat([head(5, value.size), ...[...value].flatMap(([k, v]) => [cbor(k), cbor(v)])]);
  if (value && typeof value === 'object') return cbor(new Map(Object.entries(value)));
  throw new Error(`cannot encode ${typeof value}`);
}

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_AT = 0x40;
const FLAG_ED = 0x80;

export interface Ceremony {
  rpId: string;
  origin: string;
}

/** The COSE_Key of a node:crypto EC, OKP or RSA public key, as an authenticator encodes it (`alg`, `crv` as labelled). */
export function coseKeyOf(publicKey: KeyObject, alg = -7, crv = 1): Map<number, unknown> {
  const jwk = publicKey.export({ format: 'jwk' }) as { kty: string; x: string; y?: string; n?: string; e?: string };
  if (jwk.kty === 'OKP') return new Map<number, unknown>([[1, 1], [3, alg], [-1, crv], [-2, Buffer.from(jwk.x, 'base64url')]]);
  if (jwk.kty === 'RSA') return new Map<number, unknown>([[1, 3], [3, alg], [-1, Buffer.from(jwk.n!, 'base64url')], [-2, Buffer.from(jwk.e!, 'base64url')]]);
  return new Map<number, unknown>([[1, 2], [3, alg], [-1, crv], [-2, Buffer.from(jwk.x, 'base64url')], [-3, Buffer.from(jwk.y!, 'base64url')]]);
}

/**
 * A `none` attestation (what navigator.credentials.create hands the page) whose authenticator
 * data carries `coseKey`, whatever key that is: for registrations no real authenticator would
 * make. `rawId` is the id the page reports (the authenticator data's own by default); `flags`
 * user present, verified and attested data by default; counter 0.
 */
export function noneAttestation(
  ceremony: Ceremony & { challenge: string },
  coseKey: Map<number, unknown>,
  { credentialId = randomBytes(32), rawId = credentialId, flags = FLAG_UP | FLAG_UV | FLAG_AT }: { credentialId?: Buffer; rawId?: Buffer; flags?: number } = {},
) {
  const idLength = Buffer.alloc(2);
  idLength.writeUInt16BE(credentialId.length);
  const authData = Buffer.concat([createHash('sha256').update(ceremony.rpId).digest(), Buffer.from([flags]), Buffer.alloc(4), Buffer.alloc(16), idLength, credentialId, cbor(coseKey)]);
  const clientData = { type: 'webauthn.create', challenge: ceremony.challenge, origin: ceremony.origin, crossOrigin: false };
  return {
    credentialId: rawId.toString('base64url'),
    clientDataJson: Buffer.from(JSON.stringify(clientData)).toString('base64url'),
    attestationObject: cbor(new Map<string, unknown>([['fmt', 'none'], ['attStmt', new Map()], ['authData', authData]])).toString('base64url'),
  };
}

/**
 * A get-ceremony assertion by `privateKey` (EC, RSA or Ed25519) over `challenge` (raw bytes), with
 * the authenticator-data `flags` given (user present and verified by default) and `extensions`
 * appended (the ED flag set): for assertions SoftwareAuthenticator does not make.
 */
export function signedAssertion(
  privateKey: KeyObject,
  ceremony: Ceremony & { challenge: Buffer; credentialId: Buffer; counter: number; flags?: number; extensions?: Buffer },
) {
  const count = Buffer.alloc(4);
  count.writeUInt32BE(ceremony.counter);
  const flags = (ceremony.flags ?? FLAG_UP | FLAG_UV) | (ceremony.extensions ? FLAG_ED : 0);
  const authenticatorData = Buffer.concat([createHash('sha256').update(ceremony.rpId).digest(), Buffer.from([flags]), count, ...(ceremony.extensions ? [ceremony.extensions] : [])]);
  const clientDataJson = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: ceremony.challenge.toString('base64url'), origin: ceremony.origin, crossOrigin: false }));
  const signed = Buffer.concat([authenticatorData, createHash('sha256').update(clientDataJson).digest()]);
  const signature = privateKey.asymmetricKeyType === 'ed25519' ? sign(null, signed, privateKey) : sign('sha256', signed, privateKey);
  return {
    credentialId: ceremony.credentialId.toString('base64url'),
    clientDataJson: clientDataJson.toString('base64url'),
    authenticatorData: authenticatorData.toString('base64url'),
    signature: signature.toString('base64url'),
  };
}

/**
 * A software WebAuthn authenticator (ES256, `none` attestation) that produces exactly what a
 * browser hands the page: base64url clientDataJSON, attestationObject, authenticatorData and a
 * DER signature over authenticatorData ‖ SHA-256(clientDataJSON).
 */
export class SoftwareAuthenticator {
  readonly credentialId = randomBytes(32);
  private readonly privateKey: KeyObject;
  private readonly publicJwk: { x: string; y: string };
  counter = 0;

  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.privateKey = privateKey;
    this.publicJwk = publicKey.export({ format: 'jwk' }) as { x: string; y: string };
  }

  get id(): string {
    return this.credentialId.toString('base64url');
  }

  private authData(rpId: string, flags: number, attested?: Buffer): Buffer {
    const count = Buffer.alloc(4);
    count.writeUInt32BE(this.counter);
    return Buffer.concat([createHash('sha256').update(rpId).digest(), Buffer.from([flags]), count, ...(attested ? [attested] : [])]);
  }

  /** navigator.credentials.create(): `challenge` is the base64url registration challenge. */
  create(ceremony: Ceremony & { challenge: string; type?: string }) {
    const coseKey = new Map<number, unknown>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, Buffer.from(this.publicJwk.x, 'base64url')],
      [-3, Buffer.from(this.publicJwk.y, 'base64url')],
    ]);
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const attested = Buffer.concat([Buffer.alloc(16), idLength, this.credentialId, cbor(coseKey)]);
    const clientData = { type: ceremony.type ?? 'webauthn.create', challenge: ceremony.challenge, origin: ceremony.origin, crossOrigin: false };
    const attestationObject = cbor(new Map<string, unknown>([['fmt', 'none'], ['attStmt', new Map()], ['authData', this.authData(ceremony.rpId, FLAG_UP | FLAG_UV | FLAG_AT, attested)]]));
    return {
      credentialId: this.id,
      clientDataJson: Buffer.from(JSON.stringify(clientData)).toString('base64url'),
      attestationObject: attestationObject.toString('base64url'),
      transports: ['internal'] as string[],
    };
  }

  /** navigator.credentials.get(): `challenge` is the raw challenge bytes (base64url-encoded into clientDataJSON). */
  get(ceremony: Ceremony & { challenge: Buffer; userPresent?: boolean; counter?: number; type?: string }) {
    this.counter = ceremony.counter ?? this.counter + 1;
    const authenticatorData = this.authData(ceremony.rpId, ceremony.userPresent === false ? 0 : FLAG_UP | FLAG_UV);
    const clientDataJson = Buffer.from(JSON.stringify({ type: ceremony.type ?? 'webauthn.get', challenge: ceremony.challenge.toString('base64url'), origin: ceremony.origin, crossOrigin: false }));
    const signature = sign('sha256', Buffer.concat([authenticatorData, createHash('sha256').update(clientDataJson).digest()]), this.privateKey);
    return {
      credentialId: this.id,
      clientDataJson: clientDataJson.toString('base64url'),
      authenticatorData: authenticatorData.toString('base64url'),
      signature: signature.toString('base64url'),
    };
  }
}
