import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { AppError } from '../../platform/errors.js';
import type { StoredOutcome } from './repo.js';
import { MAX_SANDBOX_SETTLE_SECONDS, replayOutcome, type SignedRequests } from './signed-retry.js';

export const SIGNATURE_HEADER = 'service-wallet-signature';
/** The upstream SDK's name for the same header (UPSTREAM-FACTS §7.1): accepted as an alias. */
export const SIGNATURE_HEADER_ALIAS = 'grid-wallet-signature';
export const REQUEST_ID_HEADER = 'request-id';
export const SETTLE_DELAY_HEADER = 'sandbox-settle-delay';

/**
 * Header schema for routes with a signed retry, for validation and the OpenAPI document. The
 * signature and Request-Id carry no length limit here: one too long to be a stamp or a request id
 * is the retry's 401 (WALLET_SIGNATURE_MALFORMED, REQUEST_ID_UNKNOWN; spec §5 rule 2), not a 400.
 * Node's 16 KiB header limit bounds them, and `parseStamp` reads at most 2048 characters.
 */
export const SignedRetryHeaders = Type.Object({
  'service-wallet-signature': Type.Optional(
    Type.String({ description: 'Signed retry only: the wallet signature (stamp) over `payloadToSign`. `Grid-Wallet-Signature` is accepted as an alias.' }),
  ),
  'grid-wallet-signature': Type.Optional(
    Type.String({
      description:
        'Alias of `Service-Wallet-Signature` (the name the upstream SDK sends). Either header may carry the stamp; both present with different values is 400 INVALID_INPUT.',
    }),
  ),
  'request-id': Type.Optional(Type.String({ description: 'Signed retry only: the `requestId` of the 202 challenge.' })),
  'sandbox-settle-delay': Type.Optional(
    Type.String({
      // Exactly the whole numbers 0–3600 (MAX_SANDBOX_SETTLE_SECONDS), so the documented pattern and range agree.
      pattern: '^(?:[0-9]|[1-9][0-9]{1,2}|[1-2][0-9]{3}|3[0-5][0-9]{2}|3600)$',
      description: `Sandbox platforms only: seconds the simulated wallet provider takes to settle this operation (0–${MAX_SANDBOX_SETTLE_SECONDS}); longer than the settle wait answers PROCESSING. Ignored in production.`,
    }),
  ),
});

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The wallet signature from `Service-Wallet-Signature` or its alias `Grid-Wallet-Signature`; two different values are refused. */
export function walletSignature(request: FastifyRequest): string | undefined {
  const stamp = header(request, SIGNATURE_HEADER);
  const alias = header(request, SIGNATURE_HEADER_ALIAS);
  if (stamp !== undefined && alias !== undefined && stamp !== alias) {
    throw new AppError('INVALID_INPUT', 'Service-Wallet-Signature and Grid-Wallet-Signature carry different signatures; send one of them.', {
      details: {
        errors: [
          { field: `header.${SIGNATURE_HEADER}`, message: 'differs from header.grid-wallet-signature' },
          { field: `header.${SIGNATURE_HEADER_ALIAS}`, message: 'differs from header.service-wallet-signature' },
        ],
      },
    });
  }
  return stamp ?? alias;
}

/**
 * The signed-retry headers: undefined on a first call (neither present); both, on a retry.
 * One without the other is the retry's 401 (spec §5 rule 2).
 */
export function signedRetryHeaders(request: FastifyRequest): { stamp: string; requestId: string } | undefined {
  const stamp = walletSignature(request);
  const requestId = header(request, REQUEST_ID_HEADER);
  if (stamp === undefined && requestId === undefined) return undefined;
  if (stamp === undefined) {
    throw new AppError('WALLET_SIGNATURE_MISSING', 'The signed retry needs the Service-Wallet-Signature header (or its alias Grid-Wallet-Signature).');
  }
  if (requestId === undefined) throw new AppError('REQUEST_ID_MISSING', 'The signed retry needs the Request-Id header from the 202 challenge.');
  return { stamp, requestId };
}

export function settleDelaySeconds(request: FastifyRequest): number {
  const raw = header(request, SETTLE_DELAY_HEADER);
  if (raw === undefined) return 0;
  const seconds = Number(raw);
  if (!Number.isInteger(seconds) || seconds > MAX_SANDBOX_SETTLE_SECONDS) {
    throw new AppError('INVALID_INPUT', `Sandbox-Settle-Delay must be whole seconds from 0 to ${MAX_SANDBOX_SETTLE_SECONDS}.`, {
      details: { errors: [{ field: 'header.sandbox-settle-delay', message: `must be 0–${MAX_SANDBOX_SETTLE_SECONDS}` }] },
    });
  }
  return seconds;
}

/**
 * Answers the signed retry of `operation` on `targetId` (the resource in the path): the
 * operation's outcome, or PROCESSING while the wallet provider settles.
 */
export async function answerSignedRetry(
  signed: SignedRequests,
  request: FastifyRequest,
  reply: FastifyReply,
  operation: string,
  targetId: string,
  headers: { stamp: string; requestId: string },
): Promise<FastifyReply> {
  const outcome = await signed.retry({
    platformId: request.principal.platformId,
    environment: request.principal.environment,
    operation,
    targetId,
    body: request.body ?? {},
    ...headers,
    settleDelaySeconds: settleDelaySeconds(request),
  });
  return sendOutcome(reply, outcome);
}

export function sendOutcome(reply: FastifyReply, outcome: StoredOutcome): FastifyReply {
  const { statusCode, body } = replayOutcome(outcome);
  reply.code(statusCode);
  return body === undefined ? reply.send() : reply.send(body);
}
