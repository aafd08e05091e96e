import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { newClientKey, stamp, WalletClient } from '../helpers/wallet.js';

/**
 * A signed-retry challenge belongs to the platform that was issued it (DESIGN §2 Tenancy): a
 * mutation audit found that a Request-Id looked up without its platform went unnoticed. Another
 * platform presenting the same Request-Id, signature and body (a signed request it intercepted)
 * must neither redeem the challenge nor read its outcome.
 */
let ctx: TestContext;
let owner: WalletClient;
let other: WalletClient;

beforeAll(async () => {
  ctx = await createTestContext();
  owner = new WalletClient(ctx, ctx.platform);
  other = new WalletClient(ctx, await ctx.newPlatform());
  await owner.enableWallets();
  await other.enableWallets();
});
afterAll(async () => ctx.close());

describe("another platform's Request-Id", () => {
  it('is 401 REQUEST_ID_UNKNOWN before and after its own platform redeems it, and leaves the challenge to its owner', async () => {
    const wallet = await owner.newWallet();
    const { key, session } = await owner.login(wallet.credentialId);
    const path = `/auth/sessions/${session.id}/refresh`;
    const body = { clientPublicKey: newClientKey().publicKey };
    const challenge = await owner.firstLeg('POST', path, body);
    const headers = { 'service-wallet-signature': await stamp(key, challenge.payloadToSign), 'request-id': challenge.requestId };

    const stolen = expectEnvelope(await other.call('POST', path, body, headers), 401, 'UNAUTHORIZED');
    expect(stolen.details).toEqual({ reason: 'REQUEST_ID_UNKNOWN' });

    const refreshed = await owner.call('POST', path, body, headers);
    expect(refreshed.statusCode, refreshed.body).toBe(201);

    const replayed = expectEnvelope(await other.call('POST', path, body, headers), 401, 'UNAUTHORIZED');
    expect(replayed.details).toEqual({ reason: 'REQUEST_ID_UNKNOWN' });
    expect(replayed).not.toHaveProperty('id');
  });
});
