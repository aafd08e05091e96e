import type { Resolver } from '../../platform/address-guard.js';
import { guardedRequest } from '../../platform/guarded-request.js';

/** The most of another VASP's answer Corridor reads: an lnurlp or payreq response is a few KiB. */
export const MAX_UMA_RESPONSE_BYTES = 64 * 1024;

export interface VaspRequest {
  url: URL;
  method: 'GET' | 'POST';
  body?: string;
  timeoutMs: number;
  /** Production: refuse loopback, private, link-local and metadata addresses, as webhooks do. */
  guard: boolean;
  resolver: Resolver;
}

export type VaspResponse = { ok: true; status: number; body: string } | { ok: false; reason: string };

/**
 * One request to another VASP (platform/guarded-request.ts): no redirects, one deadline for the
 * whole exchange, at most MAX_UMA_RESPONSE_BYTES read. Never throws.
 */
export async function vaspRequest(request: VaspRequest): Promise<VaspResponse> {
  const answer = await guardedRequest({ ...request, accept: 'application/json', maxBytes: MAX_UMA_RESPONSE_BYTES });
  return answer.ok ? { ok: true, status: answer.status, body: answer.body.toString('utf8') } : { ok: false, reason: answer.reason };
}

/** The code in another VASP's error answer (Corridor's envelope or LNURL's `{status: "ERROR"}` with a code), if it names one. */
export function counterpartyCode(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { code?: unknown };
    return typeof parsed.code === 'string' && /^[A-Z_]{1,64}$/.test(parsed.code) ? parsed.code : undefined;
  } catch {
    return undefined;
  }
}
