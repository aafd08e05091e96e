import { PubKeyResponse } from '@uma-sdk/core';
import type { UmaConfig } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import { AppError, type ErrorCode } from '../../platform/errors.js';
import { vaspOrigin } from './address.js';
import { parseChain, verifyChain } from './certificates.js';
import type { VaspSend } from './transport.js';

export interface CounterpartyDeps {
  clock: Clock;
  config: UmaConfig;
  /** How the request reaches the VASP (the caller's transport: network, or a simulated VASP). */
  send: VaspSend;
}

/**
 * Another VASP's keys, from its /.well-known/lnurlpubkey (UMAD-10), read by the SDK, and its
 * signing and encryption chains checked (CERT_CHAIN_INVALID / CERT_CHAIN_EXPIRED / INVALID_PUBKEY_FORMAT).
 * Fetched for every message rather than cached: a VASP that rotates or revokes its keys is
 * believed at once, and the cost is one small request per lookup or payment.
 * `options.unreachable` is the code when no usable answer comes.
 */
export async function counterpartyKeys(
  deps: CounterpartyDeps,
  domain: string,
  options: { unreachable: ErrorCode; explain: boolean },
): Promise<PubKeyResponse> {
  const response = await deps.send({ url: new URL('/.well-known/lnurlpubkey', vaspOrigin(domain)), method: 'GET' });
  if (!response.ok || response.status !== 200) {
    const reason = response.ok ? `it answered ${response.status}` : response.reason;
    // Only a platform's own lookup hears why: an anonymous sender must not learn what a
    // sandbox Corridor's network answers (refused, timed out…) at the domain it names.
    throw new AppError(options.unreachable, `The keys of ${domain} cannot be fetched${options.explain ? `: ${reason}` : ''}.`, {
      details: { vaspDomain: domain, ...(options.explain ? { reason } : {}) },
    });
  }
  let keys: PubKeyResponse;
  try {
    keys = PubKeyResponse.fromJson(response.body);
  } catch {
    throw new AppError('CERT_CHAIN_INVALID', `The certificates ${domain} publishes cannot be read as X.509.`, { details: { vaspDomain: domain } });
  }
  const trustedRoots = deps.config.trustedRoots ?? [];
  verifyChain(parseChain(keys.signingCertChain, 'signing'), deps.clock.now(), trustedRoots, 'signing');
  // Both keys come from checked chains: the SDK falls back to the bare signingPubKey /
  // encryptionPubKey fields when a chain is missing, and payer data encrypted to a key no
  // (trusted) chain vouches for goes to whoever published it.
  verifyChain(parseChain(keys.encryptionCertChain, 'encryption'), deps.clock.now(), trustedRoots, 'encryption');
  return keys;
}
