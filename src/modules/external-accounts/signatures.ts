import { createHash, createPublicKey, verify as verifyEd25519 } from 'node:crypto';
import { base58, base64, bech32 } from '@scure/base';
import type bitcoinMessageModule from 'bitcoinjs-message';
import type { Hex } from 'viem';
import { loadOnFirstUse } from '../../platform/load-on-first-use.js';
import { base58check, sparkIdentityKey } from './formats.js';
import type { DestinationNetwork } from './variants.js';

/**
 * Ownership proofs: a signature by the wallet's own key over the challenge's exact
 * `messageToSign`, checked for the wallet's network:
 *
 * - EVM (Base, Ethereum, Polygon, Plasma): EIP-191 personal_sign, 65-byte hex; the recovered
 *   address must be the account's (viem). Externally owned accounts only: a contract wallet's
 *   EIP-1271 check needs the chain.
 * - Tron: TIP-191 (TronWeb signMessageV2): keccak256 of "\x19TRON Signed Message:\n" + length +
 *   message, secp256k1 recovery (viem), compared with the address's 20 bytes.
 * - Solana: Ed25519 over the UTF-8 message, base58 (node:crypto), the address being the key.
 * - Spark: a Bitcoin message signature (base64) by the wallet identity key the address
 *   encodes, in BIP-137 or Electrum form (bitcoinjs-message).
 *
 * Lightning destinations have no key of the account holder to prove, so they have no proof.
 */
export type SignatureScheme = 'bip137' | 'electrum';

/** `malformed`: the signature cannot be one for this network at all (bad input, no attempt). */
export type SignatureCheck = 'valid' | 'invalid' | 'malformed';

/** What each network's signature looks like, for the error that rejects a malformed one. */
const SIGNATURE_FORMATS: Record<string, string> = {
  EVM: '0x and 130 hex digits (65 bytes: r, s, v)',
  TRON: '65 bytes in hex (0x optional)',
  SOLANA: 'base58 of 64 bytes',
  SPARK: 'base64 of 65 bytes (Bitcoin message signature)',
};

const HEX_65 = /^(0x)?[0-9a-fA-F]{130}$/;
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const TRON_PREFIX = '\x19TRON Signed Message:\n';

// Loaded on the first proof checked, not at start-up.
const viemUtils = loadOnFirstUse<typeof import('viem/utils')>('viem/utils');
const bitcoinMessage = loadOnFirstUse<typeof bitcoinMessageModule>('bitcoinjs-message');

const hash160 = (bytes: Uint8Array) => createHash('ripemd160').update(createHash('sha256').update(bytes).digest()).digest();

async function checkEvm(address: string, message: string, signature: string): Promise<SignatureCheck> {
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) return 'malformed';
  const { verifyMessage } = viemUtils();
  try {
    return (await verifyMessage({ address: address as Hex, message, signature: signature as Hex })) ? 'valid' : 'invalid';
  } catch {
    return 'invalid';
  }
}

async function checkTron(address: string, message: string, signature: string): Promise<SignatureCheck> {
  if (!HEX_65.test(signature)) return 'malformed';
  const { concat, keccak256, recoverAddress, stringToBytes } = viemUtils();
  const bytes = stringToBytes(message);
  const hash = keccak256(concat([stringToBytes(`${TRON_PREFIX}${bytes.length}`), bytes]));
  try {
    const recovered = await recoverAddress({ hash, signature: (signature.startsWith('0x') ? signature : `0x${signature}`) as Hex });
    const expected = Buffer.from(base58check.decode(address).subarray(1)).toString('hex');
    return recovered.slice(2).toLowerCase() === expected ? 'valid' : 'invalid';
  } catch {
    return 'invalid';
  }
}

function checkSolana(address: string, message: string, signature: string): SignatureCheck {
  let signatureBytes: Uint8Array;
  try {
    signatureBytes = base58.decode(signature);
  } catch {
    return 'malformed';
  }
  if (signatureBytes.length !== 64) return 'malformed';
  try {
    const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, base58.decode(address)]), format: 'der', type: 'spki' });
    return verifyEd25519(null, Buffer.from(message, 'utf8'), key, signatureBytes) ? 'valid' : 'invalid';
  } catch {
    return 'invalid';
  }
}

/** The three address forms of one compressed key a Bitcoin message signature may name. */
function bitcoinAddresses(publicKey: Uint8Array) {
  const keyHash = hash160(publicKey);
  return {
    p2pkh: base58check.encode(Uint8Array.from([0x00, ...keyHash])),
    p2shP2wpkh: base58check.encode(Uint8Array.from([0x05, ...hash160(Uint8Array.from([0x00, 0x14, ...keyHash]))])),
    p2wpkh: bech32.encode('bc', [0, ...bech32.toWords(keyHash)]),
  };
}

function checkSpark(address: string, message: string, signature: string, scheme: SignatureScheme): SignatureCheck {
  let bytes: Uint8Array;
  try {
    bytes = base64.decode(signature);
  } catch {
    return 'malformed';
  }
  if (bytes.length !== 65) return 'malformed';
  const header = bytes[0]!;
  const addresses = bitcoinAddresses(sparkIdentityKey(address).publicKey);
  const verifies = (against: string, checkSegwitAlways = false) => {
    try {
      return bitcoinMessage().verify(message, against, Buffer.from(bytes), undefined, checkSegwitAlways);
    } catch {
      return false;
    }
  };
  if (scheme === 'electrum') {
    // Electrum marks every key as P2PKH-compressed (31–34), whatever address type it signs for.
    if (header < 31 || header > 34) return 'invalid';
    return verifies(addresses.p2pkh) || verifies(addresses.p2wpkh, true) ? 'valid' : 'invalid';
  }
  // BIP-137: the header names the address type: 31–34 P2PKH, 35–38 P2SH-P2WPKH, 39–42 P2WPKH (compressed keys).
  if (header >= 31 && header <= 34) return verifies(addresses.p2pkh) ? 'valid' : 'invalid';
  if (header >= 35 && header <= 38) return verifies(addresses.p2shP2wpkh) ? 'valid' : 'invalid';
  if (header >= 39 && header <= 42) return verifies(addresses.p2wpkh) ? 'valid' : 'invalid';
  return 'invalid';
}

export async function checkOwnershipSignature(
  network: DestinationNetwork,
  address: string,
  message: string,
  signature: string,
  scheme: SignatureScheme,
): Promise<SignatureCheck> {
  switch (network) {
    case 'BASE':
    case 'ETHEREUM':
    case 'POLYGON':
    case 'PLASMA':
      return checkEvm(address, message, signature);
    case 'TRON':
      return checkTron(address, message, signature);
    case 'SOLANA':
      return checkSolana(address, message, signature);
    case 'SPARK':
      return checkSpark(address, message, signature, scheme);
    default:
      return 'malformed';
  }
}

export function signatureFormat(network: DestinationNetwork): string {
  if (network === 'TRON' || network === 'SOLANA' || network === 'SPARK') return SIGNATURE_FORMATS[network]!;
  return SIGNATURE_FORMATS.EVM!;
}
