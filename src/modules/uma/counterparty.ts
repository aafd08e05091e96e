import { PubKeyResponse } from '@uma-sdk/core';
import type { UmaConfig } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import { AppError, type ErrorCode } from '../../platform/errors.js';
import type { Resolver } from '../webhooks/index.js';
import { vaspOrigin } from './address.js';
import { certificatesFromPem, parseChain, verifyChain } from './certificates.js';
import { vaspRequest } from './http-client.js';

export interface CounterpartyDeps {
  clock: Clock;
  config: UmaConfig;
  resolver: Resolver;
}

/**
 * Another VASP's keys, from its /.well-known/lnurlpubkey (UMAD-10), read by the SDK, and its
 * signing chain checked (CERT_CHAIN_INVALID / CERT_CHAIN_EXPIRED / INVALID_PUBKEY_FORMAT).
 * Fetched for every message rather than cached: a VASP that rotates or revokes its keys is
 * believed at once, and the cost is one small request per lookup or payment.
 * `unreachable` is the code when no usable answer comes.
 */
export async function counterpartyKeys(deps: CounterpartyDeps, domain: string, guard: boolean, unreachable: ErrorCode): Promise<PubKeyResponse> {
  const url = new URL('/.well-known/lnurlpubkey', vaspOrigin(domain));
  const response = await vaspRequest({ url, method: 'GET', timeoutMs: deps.config.timeoutMs, guard, resolver: deps.resolver });
  if (!response.ok) throw new AppError(unreachable, `The keys of ${domain} cannot be fetched: ${response.reason}.`, { details: { vaspDomain: domain, reason: response.reason } });
  if (response.status !== 200) {
    throw new AppError(unreachable, `The keys of ${domain} cannot be fetched: it answered ${response.status}.`, { details: { vaspDomain: domain, counterpartyStatus: response.status } });
  }
  let keys: PubKeyResponse;
  try {
    keys = PubKeyResponse.fromJson(response.body);
  } catch {
    throw new AppError('CERT_CHAIN_INVALID', `The certificates ${domain} publishes cannot be read as X.509.`, { details: { vaspDomain: domain } });
  }
  const chain = parseChain(keys.signingCertChain);
  verifyChain(chain, deps.clock.now(), deps.config.trustedRootsPem ? certificatesFromPem(deps.config.trustedRootsPem) : []);
  if (keys.encryptionCertChain) verifyChain(parseChain(keys.encryptionCertChain), deps.clock.now(), deps.config.trustedRootsPem ? certificatesFromPem(deps.config.trustedRootsPem) : []);
  return keys;
}
