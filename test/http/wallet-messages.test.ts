import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { WalletClient } from '../helpers/wallet.js';

/** A message provider answering `status`, recording what it was sent. */
let provider: Server;
let status = 202;
const received: Array<{ authorization?: string; body: Record<string, unknown> }> = [];
let ctx: TestContext;
let client: WalletClient;

const read = async (request: IncomingMessage) => {
  let text = '';
  for await (const chunk of request) text += String(chunk);
  return JSON.parse(text) as Record<string, unknown>;
};

beforeAll(async () => {
  provider = createServer((request, response) => {
    void read(request).then((body) => {
      received.push({ authorization: request.headers.authorization, body });
      response.statusCode = status;
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  const { port } = provider.address() as { port: number };
  ctx = await createTestContext({ env: { CORRIDOR_MESSAGES_URL: `http://127.0.0.1:${port}/messages`, CORRIDOR_MESSAGES_TOKEN: 'msg-secret' } });
  client = new WalletClient(ctx, await ctx.newPlatform('production'));
  await client.enableWallets();
  expect((await client.call('PATCH', '/config', { embeddedWalletConfig: { sendFromEmailAddress: 'no-reply@acme.example', sendFromEmailSenderName: 'Acme' } })).statusCode).toBe(200);
});
afterAll(async () => {
  await ctx.close();
  await new Promise((resolve) => provider.close(resolve));
});

describe('OTP delivery through CORRIDOR_MESSAGES_URL', () => {
  it('POSTs the code as JSON with the Bearer token, and a failing provider is 503 with no code issued', async () => {
    const wallet = await client.newWallet();
    status = 202;
    const challenged = await client.call('POST', `/auth/credentials/${wallet.credentialId}/challenge`);
    expect(challenged.statusCode, challenged.body).toBe(200);
    const sent = received.at(-1)!;
    expect(sent.authorization).toBe('Bearer msg-secret');
    expect(sent.body).toEqual({
      channel: 'EMAIL',
      to: wallet.email,
      subject: 'Acme Wallet verification code',
      text: expect.stringMatching(/^Your Acme Wallet verification code is \d{6}\. It expires in 5 minutes\. Never share it\.$/),
      from: { address: 'no-reply@acme.example', name: 'Acme' },
    });

    status = 500;
    const before = await ctx.handle.db.selectFrom('otp_challenges').select('id').execute();
    expectEnvelope(await client.call('POST', `/auth/credentials/${wallet.credentialId}/challenge`), 503, 'SERVICE_UNAVAILABLE');
    expect(await ctx.handle.db.selectFrom('otp_challenges').select('id').execute()).toEqual(before);
  });
});
