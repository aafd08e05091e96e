import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { newClientKey, WalletClient } from '../helpers/wallet.js';

/** A message provider answering `status`, recording what it was sent. */
let provider: Server;
let status = 202;
const received: Array<{ authorization?: string; body: Record<string, unknown> }> = [];
let ctx: TestContext;
let client: WalletClient;
const logLines: string[] = [];

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
  ctx = await createTestContext({ logLines, env: { CORRIDOR_MESSAGES_URL: `http://127.0.0.1:${port}/messages`, CORRIDOR_MESSAGES_TOKEN: 'msg-secret' } });
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

describe('what is logged', () => {
  it('never writes an OTP, a session or export key, or the wallet secret to the log', async () => {
    status = 202;
    // Long alphanumeric codes, so a code found in the log cannot be a coincidence of digits.
    expect((await client.call('PATCH', '/config', { embeddedWalletConfig: { otpLength: 12, alphanumeric: true } })).statusCode).toBe(200);
    const wallet = await client.newWallet();
    const bundle = await client.challenge(wallet.credentialId);
    const code = /code is ([A-Z0-9]{12})\./.exec(String(received.at(-1)!.body.text))![1]!;
    const key = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, code, key) };
    const verifyPath = `/auth/credentials/${wallet.credentialId}/verify`;
    expect((await client.signedRetry('POST', verifyPath, body, await client.firstLeg('POST', verifyPath, body), key)).statusCode).toBe(200);
    const receiver = newClientKey();
    const exported = await client.signed('POST', `/internal-accounts/${wallet.accountId}/export`, { clientPublicKey: receiver.publicKeyUncompressed }, key);
    expect(exported.statusCode).toBe(200);
    const mnemonic = await client.openExport((exported.json() as { encryptedWalletCredentials: string }).encryptedWalletCredentials, receiver, wallet.accountId);
    await ctx.jobs.runDue(50);
    const log = logLines.join('\n');
    expect(logLines.length).toBeGreaterThan(10);
    // Any two neighbouring words of the mnemonic, not one: a single word ("will ", "job ") also
    // turns up in ordinary log messages by chance.
    const words = mnemonic.split(' ');
    const pairs = words.slice(1).map((word, i) => `${words[i]} ${word}`);
    for (const secret of [code, key.privateKey, receiver.privateKey, mnemonic, ...pairs]) {
      expect(log.includes(secret), `log contains a secret (${secret.length} chars)`).toBe(false);
    }
  });
});
