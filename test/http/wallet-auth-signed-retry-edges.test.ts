import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { newClientKey, stamp, WalletClient, type ClientKey } from '../helpers/wallet.js';

/**
 * The edges of the signed-retry pattern (spec §4.3, §5 rule 2) no other test reached, each on a
 * session refresh: the window's last instant, a Request-Id re-sent on another body or on another
 * session, and a stamp whose DER is malformed in its SEQUENCE length only.
 */
let ctx: TestContext;
let client: WalletClient;

beforeAll(async () => {
  ctx = await createTestContext();
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
});
afterAll(async () => ctx.close());

/** A logged-in wallet session's refresh: its first leg answered, and the stamp of its payload. */
async function refreshChallenge(session?: { key: ClientKey; session: { id: string } }) {
  const signer = session ?? (await client.login((await client.newWallet()).credentialId));
  const path = `/auth/sessions/${signer.session.id}/refresh`;
  const body = { clientPublicKey: newClientKey().publicKey };
  const challenge = await client.firstLeg('POST', path, body);
  const signature = await stamp(signer.key, challenge.payloadToSign);
  const headers = { 'service-wallet-signature': signature, 'request-id': challenge.requestId };
  return { path, body, headers, signature, requestId: challenge.requestId, expiresAt: new Date(challenge.expiresAt).getTime() };
}

describe('the signed-retry window (§4.3 step 3: before expiresAt)', () => {
  // A session refresh, not an export: the export checks its window a second time when it reveals.
  it('refuses a retry at expiresAt exactly: 401 REQUEST_ID_EXPIRED', async () => {
    const { path, body, headers, expiresAt } = await refreshChallenge();
    ctx.clock.set(new Date(expiresAt));
    const expired = expectEnvelope(await client.call('POST', path, body, headers), 401, 'UNAUTHORIZED');
    expect(expired.details).toEqual({ reason: 'REQUEST_ID_EXPIRED' });
  });

  it('accepts a retry one millisecond before expiresAt', async () => {
    const { path, body, headers, expiresAt } = await refreshChallenge();
    ctx.clock.set(new Date(expiresAt - 1));
    const refreshed = await client.call('POST', path, body, headers);
    expect(refreshed.statusCode, refreshed.body).toBe(201);
  });
});

describe('a redeemed Request-Id re-sent with its signature on another body', () => {
  // Single use: only the exact same signed request (body, signature, Request-Id) is correlated
  // with the operation it started.
  it('is 401 REQUEST_ID_USED, while the identical re-send still answers the outcome', async () => {
    const { path, body, headers } = await refreshChallenge();
    const refreshed = await client.call('POST', path, body, headers);
    expect(refreshed.statusCode, refreshed.body).toBe(201);

    const otherBody = { clientPublicKey: newClientKey().publicKey };
    const reused = expectEnvelope(await client.call('POST', path, otherBody, headers), 401, 'UNAUTHORIZED');
    expect(reused.details).toEqual({ reason: 'REQUEST_ID_USED' });

    const again = await client.call('POST', path, body, headers);
    expect(again.statusCode, again.body).toBe(201);
    expect(again.json()).toEqual(refreshed.json());
  });
});

describe('a signed retry on another resource than its challenge was issued for', () => {
  // The same operation on another session names no challenge issued for that request; refused
  // before anything is claimed, so the retry on the session it was issued for still redeems it.
  it('is 401 REQUEST_ID_UNKNOWN and changes nothing', async () => {
    const wallet = await client.newWallet();
    const first = await client.login(wallet.credentialId);
    const second = await client.login(wallet.credentialId);
    const { path, body, headers } = await refreshChallenge(first);

    const elsewhere = expectEnvelope(await client.call('POST', `/auth/sessions/${second.session.id}/refresh`, body, headers), 401, 'UNAUTHORIZED');
    expect(elsewhere.details).toEqual({ reason: 'REQUEST_ID_UNKNOWN' });

    const refreshed = await client.call('POST', path, body, headers);
    expect(refreshed.statusCode, refreshed.body).toBe(201);
  });
});

/** The stamp with its DER signature's SEQUENCE length byte set to `length`. */
function withSequenceLength(header: string, length: number): string {
  const decoded = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { publicKey: string; scheme: string; signature: string };
  const der = Buffer.from(decoded.signature, 'hex');
  expect(der[0]).toBe(0x30);
  expect(der[1]).toBe(der.length - 2);
  der[1] = length;
  return Buffer.from(JSON.stringify({ ...decoded, signature: der.toString('hex') })).toString('base64url');
}

describe('a stamp whose DER SEQUENCE length is wrong', () => {
  // Not DER, even when the two INTEGERs inside are well formed and fill the rest exactly: §5 rule 2's
  // MALFORMED, not INVALID; refused before the challenge is looked at, so it does not use the Request-Id up.
  it('is 401 WALLET_SIGNATURE_MALFORMED, and the genuine stamp still redeems the challenge', async () => {
    const { path, body, signature, requestId } = await refreshChallenge();
    const derLength = Buffer.from((JSON.parse(Buffer.from(signature, 'base64url').toString('utf8')) as { signature: string }).signature, 'hex').length;

    for (const length of [derLength - 3, derLength - 1, 0x7f]) {
      const refused = await client.call('POST', path, body, { 'service-wallet-signature': withSequenceLength(signature, length), 'request-id': requestId });
      expectEnvelope(refused, 401, 'WALLET_SIGNATURE_MALFORMED');
    }

    const refreshed = await client.call('POST', path, body, { 'service-wallet-signature': signature, 'request-id': requestId });
    expect(refreshed.statusCode, refreshed.body).toBe(201);
  });
});
