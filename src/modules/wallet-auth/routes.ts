import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { errorResponses } from '../../platform/http/schemas.js';
import { AppError } from '../../platform/errors.js';
import { answerSignedRetry, REQUEST_ID_HEADER, sendOutcome, settleDelaySeconds, signedRetryHeaders, SignedRetryHeaders } from './http.js';
import {
  AuthMethodResponse,
  AuthSession,
  AuthSignedRequestChallenge,
  CredentialChallengeRequest,
  CredentialCreateRequest,
  CredentialList,
  CredentialListQuery,
  CredentialParams,
  CredentialVerifyRequest,
  EnclaveInfo,
  PasskeyAuthChallenge,
  SessionList,
  SessionParams,
  SessionRefreshRequest,
  SignedRequestChallenge,
  WalletOperationProcessing,
} from './schemas.js';
import type { WalletAuthRouteDeps } from './route-deps.js';
import { OPERATIONS } from './context.js';

const SIGNED_RETRY_NOTE =
  ' Signed-retry pattern: the first call answers 202 with `payloadToSign`; re-send the same request with `Service-Wallet-Signature` (or its alias `Grid-Wallet-Signature`) and `Request-Id` before `expiresAt`.';

export const walletAuthRoutes: FastifyPluginAsyncTypebox<WalletAuthRouteDeps> = async (app, deps) => {
  const tags = ['Embedded Wallet Auth'];
  const { walletAuth, signed } = deps;

  app.get('/auth/enclave', {
    schema: {
      operationId: 'getWalletEnclave',
      tags,
      summary: "The wallet enclave's public signing key",
      description:
        'Target bundles, export bundles and OTP verification tokens are signed by this key. Pass it as `dangerouslyOverrideSignerPublicKey` to the @turnkey/crypto helpers.',
      response: { 200: EnclaveInfo, ...errorResponses(401, 500) },
    },
    handler: async () => ({ enclaveQuorumPublic: deps.enclavePublicKey }),
  });

  app.post('/auth/credentials', {
    schema: {
      operationId: 'createAuthCredential',
      tags,
      summary: 'Add a credential to an embedded wallet',
      description:
        '201 at once while the account has no verified credential; otherwise 202 and a signed retry, which answers 201 (or 200 PROCESSING). ' +
        'At most one EMAIL_OTP and one SMS_OTP per account; OAUTH takes the identity (and e-mail as nickname) of a token from a trusted issuer; ' +
        'PASSKEY verifies the WebAuthn registration against the platform’s relying party (same credentialId twice: PASSKEY_CREDENTIAL_ALREADY_EXISTS). ' +
        'An OTP contact that another customer’s wallet credential carries: 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS (e-mail) or CONFLICT (phone), at the first call and the retry; ' +
        'the customer’s e-mail (phone) changed between the 202 and the signed retry: 409 CONFLICT (details.reason CONTACT_CHANGED), nothing added.' +
        SIGNED_RETRY_NOTE,
      headers: SignedRetryHeaders,
      body: CredentialCreateRequest,
      response: {
        200: WalletOperationProcessing,
        201: AuthMethodResponse,
        202: AuthSignedRequestChallenge,
        ...errorResponses(400, 401, 403, 404, 409, 500, 503),
      },
    },
    handler: async (request, reply) => {
      const { body } = request;
      const headers = signedRetryHeaders(request);
      if (headers) return answerSignedRetry(signed, request, reply, OPERATIONS.addCredential, '', headers);
      return sendOutcome(reply, await walletAuth.credentials.startAdd(request.principal.platformId, request.principal.environment, body));
    },
  });

  app.get('/auth/credentials', {
    schema: {
      operationId: 'listAuthCredentials',
      tags,
      summary: "List an embedded wallet's credentials",
      description: 'Active credentials only. An account that is not an embedded wallet of this platform lists nothing.',
      querystring: CredentialListQuery,
      response: { 200: CredentialList, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => walletAuth.credentials.list(deps.db, request.principal.platformId, request.query.accountId),
  });

  app.post('/auth/credentials/:id/challenge', {
    schema: {
      operationId: 'challengeAuthCredential',
      tags,
      summary: 'Start authenticating with a credential',
      description:
        'EMAIL_OTP and SMS_OTP: sends a new OTP (sandbox: not sent, always `000000`) and answers a fresh `otpEncryptionTargetBundle`. ' +
        'PASSKEY: send `clientPublicKey`; answers `challenge` (give its UTF-8 bytes to navigator.credentials.get) and `requestId` for verify. OAUTH needs no challenge. ' +
        '200 `{status: PROCESSING}` while the message provider settles: call again (no second code is sent). 429 RATE_LIMITED with Retry-After when throttled.',
      headers: SignedRetryHeaders,
      params: CredentialParams,
      body: CredentialChallengeRequest,
      // PasskeyAuthChallenge first: the serializer takes the first branch that fits, and AuthMethodResponse would fit it too.
      response: { 200: Type.Union([PasskeyAuthChallenge, AuthMethodResponse, WalletOperationProcessing]), ...errorResponses(400, 401, 403, 404, 429, 500, 503) },
    },
    handler: async (request, reply) =>
      sendOutcome(
        reply,
        await walletAuth.logins.challenge(request.principal.platformId, request.principal.environment, request.params.id, request.body, settleDelaySeconds(request)),
      ),
  });

  app.post('/auth/credentials/:id/verify', {
    schema: {
      operationId: 'verifyAuthCredential',
      tags,
      summary: 'Prove control of a credential and open a session',
      description:
        'EMAIL_OTP and SMS_OTP: send `encryptedOtpBundle`; the 202 challenge must be signed with the key pair inside the bundle, and the signed retry answers 200 AuthSession ' +
        '(the client key is the session key) or 200 PROCESSING. Wrong codes are 401; after 5 in a row, 429 RATE_LIMITED for 15 minutes. ' +
        'OAUTH: send a fresh `oidcToken` (nonce = SHA-256 hex of `clientPublicKey`) and `clientPublicKey`; answers 200 AuthSession with `encryptedSessionSigningKey` sealed to that key. ' +
        'PASSKEY: send the `assertion` with header `Request-Id` from the challenge; answers 200 AuthSession with `encryptedSessionSigningKey`. Failed checks are 401 naming the check in `details.check`.',
      headers: SignedRetryHeaders,
      params: CredentialParams,
      body: CredentialVerifyRequest,
      response: {
        200: Type.Union([AuthSession, WalletOperationProcessing]),
        202: AuthSignedRequestChallenge,
        ...errorResponses(400, 401, 403, 404, 429, 500),
      },
    },
    handler: async (request, reply) => {
      const { platformId, environment } = request.principal;
      const { body } = request;
      if (body.type === 'OAUTH') return walletAuth.logins.verifyOauth(platformId, environment, request.params.id, body);
      if (body.type === 'PASSKEY') {
        const requestId = request.headers[REQUEST_ID_HEADER];
        if (typeof requestId !== 'string' || !requestId) {
          throw new AppError('REQUEST_ID_MISSING', 'PASSKEY verify needs the Request-Id header with the requestId of the challenge.');
        }
        return sendOutcome(reply, await walletAuth.logins.verifyPasskey(platformId, environment, request.params.id, body, requestId, settleDelaySeconds(request)));
      }
      const headers = signedRetryHeaders(request);
      if (headers) return answerSignedRetry(signed, request, reply, OPERATIONS.verifyOtp, request.params.id, headers);
      return reply.code(202).send(await walletAuth.logins.startVerifyOtp(platformId, environment, request.params.id, body));
    },
  });

  app.delete('/auth/credentials/:id', {
    schema: {
      operationId: 'revokeAuthCredential',
      tags,
      summary: 'Revoke a credential',
      description:
        'Signed by a session of a different credential on the same account. The retry answers 204 and revokes every session the credential issued, or 200 PROCESSING. ' +
        '400 when it is the account’s only credential.' +
        SIGNED_RETRY_NOTE,
      headers: SignedRetryHeaders,
      params: CredentialParams,
      response: { 200: WalletOperationProcessing, 202: AuthSignedRequestChallenge, 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 500) },
    },
    handler: async (request, reply) => {
      const headers = signedRetryHeaders(request);
      if (headers) return answerSignedRetry(signed, request, reply, OPERATIONS.revokeCredential, request.params.id, headers);
      return reply.code(202).send(await walletAuth.credentials.startRevoke(request.principal.platformId, request.params.id));
    },
  });

  app.get('/auth/sessions', {
    schema: {
      operationId: 'listAuthSessions',
      tags,
      summary: "List an embedded wallet's active sessions",
      description: 'Expired and revoked sessions are not listed; no session key is ever returned here.',
      querystring: CredentialListQuery,
      response: { 200: SessionList, ...errorResponses(400, 401, 500) },
    },
    handler: async (request) => walletAuth.sessions.list(deps.db, request.principal.platformId, request.query.accountId),
  });

  app.delete('/auth/sessions/:id', {
    schema: {
      operationId: 'revokeAuthSession',
      tags,
      summary: 'Revoke a session',
      description: 'Any active session of the account may sign, the one being revoked included. The retry answers 204, or 200 PROCESSING.' + SIGNED_RETRY_NOTE,
      headers: SignedRetryHeaders,
      params: SessionParams,
      response: { 200: WalletOperationProcessing, 202: AuthSignedRequestChallenge, 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 500) },
    },
    handler: async (request, reply) => {
      const headers = signedRetryHeaders(request);
      if (headers) return answerSignedRetry(signed, request, reply, OPERATIONS.revokeSession, request.params.id, headers);
      return reply.code(202).send(await walletAuth.sessions.startRevoke(request.principal.platformId, request.params.id));
    },
  });

  app.post('/auth/sessions/:id/refresh', {
    schema: {
      operationId: 'refreshAuthSession',
      tags,
      summary: 'Open a new session from an active one',
      description:
        'Signed by the session being refreshed. The retry answers 201 with the new session (the old one stays valid until it expires), or 200 PROCESSING.' + SIGNED_RETRY_NOTE,
      headers: SignedRetryHeaders,
      params: SessionParams,
      body: SessionRefreshRequest,
      response: { 200: WalletOperationProcessing, 201: AuthSession, 202: SignedRequestChallenge, ...errorResponses(400, 401, 403, 404, 500) },
    },
    handler: async (request, reply) => {
      const headers = signedRetryHeaders(request);
      if (headers) return answerSignedRetry(signed, request, reply, OPERATIONS.refreshSession, request.params.id, headers);
      return reply.code(202).send(await walletAuth.sessions.startRefresh(request.principal.platformId, request.params.id, request.body));
    },
  });
};
