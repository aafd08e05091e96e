import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { decryptCredentialBundle, decryptExportBundle, encryptOtpCodeToBundle, generateP256KeyPair, getPublicKey } from '@turnkey/crypto';
import { expect } from 'vitest';
import type { OutgoingMessage, MessageSender } from '../../src/platform/messages.js';
import { setReviewStatus } from '../../src/modules/customers/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { parseId } from '../../src/platform/ids.js';
import { BASE, type TestContext, type TestPlatform } from './context.js';

type Body = Record<string, unknown>;
export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** A client-side P-256 key pair, as a platform's front end would hold it. */
export interface ClientKey {
  privateKey: string;
  publicKey: string;
  publicKeyUncompressed: string;
}

export function newClientKey(): ClientKey {
  const pair = generateP256KeyPair();
  return { privateKey: pair.privateKey, publicKey: pair.publicKey, publicKeyUncompressed: pair.publicKeyUncompressed };
}

/** The session key inside an `encryptedSessionSigningKey`, opened as the client would. */
export function openSessionKey(encryptedSessionSigningKey: string, receiver: ClientKey): ClientKey {
  const privateKey = decryptCredentialBundle(encryptedSessionSigningKey, receiver.privateKey);
  return {
    privateKey,
    publicKey: Buffer.from(getPublicKey(privateKey, true)).toString('hex'),
    publicKeyUncompressed: Buffer.from(getPublicKey(privateKey, false)).toString('hex'),
  };
}

/** The `Service-Wallet-Signature` value for `payload`, made by the real client stamper. */
export async function stamp(key: ClientKey, payload: string): Promise<string> {
  const stamper = new ApiKeyStamper({ apiPublicKey: key.publicKey, apiPrivateKey: key.privateKey });
  return (await stamper.stamp(payload)).stampHeaderValue;
}

let phoneNumbers = 0;

/**
 * A phone number no other wallet of this test process was given: an OTP credential may not carry
 * a phone another customer's wallet uses (wallet-auth README).
 */
export function uniquePhoneNumber(): string {
  return `+1415${String(2_000_000 + ++phoneNumbers).padStart(7, '0')}`;
}

export interface WalletFixture {
  customerId: string;
  accountId: string;
  credentialId: string;
  email: string;
}

/** Records the messages a production platform sends. */
export class CapturingMessages implements MessageSender {
  readonly sent: OutgoingMessage[] = [];
  async send(message: OutgoingMessage): Promise<void> {
    this.sent.push(message);
  }
  lastCode(): string {
    const text = this.sent.at(-1)?.text ?? '';
    return /code is ([A-Z0-9]+)\./.exec(text)![1]!;
  }
}

let seq = 0;

/** One signed operation of a race (`WalletClient.raceSigned`): the request, and the key that signs its challenge. */
export interface SignedLeg {
  method: Method;
  path: string;
  body: unknown;
  key: ClientKey;
}

export class WalletClient {
  enclaveKey = '';

  constructor(
    readonly ctx: TestContext,
    readonly platform: TestPlatform,
  ) {}

  call(method: Method, path: string, payload?: unknown, headers: Record<string, string> = {}) {
    return this.ctx.app.inject({
      method,
      url: `${BASE}${path}`,
      headers: { authorization: this.platform.auth, ...headers },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
  }

  async enableWallets(): Promise<void> {
    const configured = await this.call('PATCH', '/config', { embeddedWalletConfig: { appName: 'Acme Wallet' } });
    expect(configured.statusCode, configured.body).toBe(200);
    this.enclaveKey = ((await this.call('GET', '/auth/enclave')).json() as { enclaveQuorumPublic: string }).enclaveQuorumPublic;
  }

  /** An approved individual with an e-mail (and optionally a phone), and its embedded wallet. */
  async newWallet(extra: Body = {}): Promise<WalletFixture> {
    const email = `user${++seq}@example.com`;
    const created = await this.call('POST', '/customers', {
      customerType: 'INDIVIDUAL',
      platformCustomerId: `w-${seq}-${Date.now()}`,
      fullName: 'Wanda Wallet',
      email,
      ...extra,
    });
    expect(created.statusCode, created.body).toBe(201);
    const customer = created.json() as { id: string; kycStatus: string };
    const customerId = customer.id;
    // Production customers are not approved on creation; approve as a finished review would.
    if (customer.kycStatus !== 'APPROVED') {
      await withTx(this.ctx.handle.db, (trx) => setReviewStatus(trx, this.ctx.clock, this.platform.uuid, parseId('Customer', customerId)!, 'APPROVED'));
    }
    const accounts = (await this.call('GET', `/customers/internal-accounts?customerId=${customerId}&type=EMBEDDED_WALLET`)).json() as { data: Array<{ id: string }> };
    expect(accounts.data).toHaveLength(1);
    const accountId = accounts.data[0]!.id;
    const credentials = (await this.call('GET', `/auth/credentials?accountId=${accountId}`)).json() as { data: Array<{ id: string }> };
    expect(credentials.data).toHaveLength(1);
    return { customerId, accountId, credentialId: credentials.data[0]!.id, email };
  }

  async challenge(credentialId: string, headers: Record<string, string> = {}): Promise<string> {
    const response = await this.call('POST', `/auth/credentials/${credentialId}/challenge`, {}, headers);
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as { otpEncryptionTargetBundle: string }).otpEncryptionTargetBundle;
  }

  /** The mnemonic inside an export answer, opened by the client key it was sealed to. */
  openExport(encryptedWalletCredentials: string, receiver: ClientKey, accountId: string): Promise<string> {
    return decryptExportBundle({
      exportBundle: encryptedWalletCredentials,
      embeddedKey: receiver.privateKey,
      organizationId: accountId,
      dangerouslyOverrideSignerPublicKey: this.enclaveKey,
      returnMnemonic: true,
    });
  }

  /** What the client sends to verify: the OTP and its fresh key, HPKE-sealed to the target. */
  async encryptOtp(bundle: string, code: string, key: ClientKey): Promise<string> {
    return encryptOtpCodeToBundle(code, bundle, key.publicKeyUncompressed, this.enclaveKey);
  }

  /** The first call of a signed operation, expected to answer 202. */
  async firstLeg(method: Method, path: string, payload?: unknown) {
    const response = await this.call(method, path, payload);
    expect(response.statusCode, response.body).toBe(202);
    return response.json() as { payloadToSign: string; requestId: string; expiresAt: string; type?: string };
  }

  /** Signs a challenge and re-sends the request. */
  async signedRetry(method: Method, path: string, payload: unknown, challenge: { payloadToSign: string; requestId: string }, key: ClientKey, headers: Record<string, string> = {}) {
    return this.call(method, path, payload, {
      'service-wallet-signature': await stamp(key, challenge.payloadToSign),
      'request-id': challenge.requestId,
      ...headers,
    });
  }

  /**
   * Races signed operations: issues every leg's challenge and stamps it (round by round), then
   * sends the signed retries of every round at once, so they reach the database together.
   * Answers each round's responses in its legs' order.
   */
  async raceSigned(rounds: SignedLeg[][]) {
    const signed = [];
    for (const legs of rounds) {
      const round = [];
      for (const { method, path, body, key } of legs) {
        const challenge = await this.firstLeg(method, path, body);
        round.push({ method, path, body, headers: { 'service-wallet-signature': await stamp(key, challenge.payloadToSign), 'request-id': challenge.requestId } });
      }
      signed.push(round);
    }
    return Promise.all(signed.map((round) => Promise.all(round.map(({ method, path, body, headers }) => this.call(method, path, body, headers)))));
  }

  /** Both legs of a signed operation; answers the retry's response. */
  async signed(method: Method, path: string, payload: unknown, key: ClientKey) {
    const challenge = await this.firstLeg(method, path, payload);
    return this.signedRetry(method, path, payload, challenge, key);
  }

  /**
   * Full EMAIL_OTP / SMS_OTP login: challenge, encrypt, verify, sign, retry. `code` may be read
   * after the challenge (a production platform's delivered code).
   */
  async login(credentialId: string, code: string | (() => string) = '000000', type = 'EMAIL_OTP'): Promise<{ key: ClientKey; session: Body & { id: string; expiresAt: string } }> {
    const bundle = await this.challenge(credentialId);
    const key = newClientKey();
    const body = { type, encryptedOtpBundle: await this.encryptOtp(bundle, typeof code === 'function' ? code() : code, key) };
    const path = `/auth/credentials/${credentialId}/verify`;
    const challenge = await this.firstLeg('POST', path, body);
    const retried = await this.signedRetry('POST', path, body, challenge, key);
    expect(retried.statusCode, retried.body).toBe(200);
    return { key, session: retried.json() as Body & { id: string; expiresAt: string } };
  }
}
