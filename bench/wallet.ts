/**
 * Wallet-auth flows for `npm run bench`, driven from the client side with the Turnkey client
 * libraries: each iteration is one whole flow (several requests plus client-side crypto).
 */
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { encryptOtpCodeToBundle, generateP256KeyPair } from '@turnkey/crypto';

export type Call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; body: Record<string, unknown> }>;

/** The sandbox allows 10 codes per credential per 15 minutes; a flow moves to a new wallet before that. */
const LOGINS_PER_WALLET = 10;

type Key = ReturnType<typeof generateP256KeyPair>;

function expectStatus(response: { status: number; body: unknown }, status: number, what: string) {
  if (response.status !== status) throw new Error(`${what} answered ${response.status}: ${JSON.stringify(response.body)}`);
}

async function signedRetry(call: Call, method: string, path: string, body: unknown, key: Key, expected: number) {
  const first = await call(method, path, body);
  expectStatus(first, 202, `${method} ${path}`);
  const stamper = new ApiKeyStamper({ apiPublicKey: key.publicKey, apiPrivateKey: key.privateKey });
  const { stampHeaderValue } = await stamper.stamp(String(first.body.payloadToSign));
  const retried = await call(method, path, body, { 'service-wallet-signature': stampHeaderValue, 'request-id': String(first.body.requestId) });
  expectStatus(retried, expected, `signed ${method} ${path}`);
  return retried.body;
}

let walletSeq = 0;
async function newWallet(call: Call): Promise<{ accountId: string; credentialId: string }> {
  const customer = await call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Bench Wallet', email: `bench${++walletSeq}-${Date.now()}@example.com` });
  expectStatus(customer, 201, 'POST /customers');
  const accounts = await call('GET', `/customers/internal-accounts?customerId=${String(customer.body.id)}&type=EMBEDDED_WALLET`);
  const accountId = String((accounts.body.data as Array<{ id: string }>)[0]!.id);
  const credentials = await call('GET', `/auth/credentials?accountId=${accountId}`);
  return { accountId, credentialId: String((credentials.body.data as Array<{ id: string }>)[0]!.id) };
}

async function enableWallets(call: Call): Promise<string> {
  expectStatus(await call('PATCH', '/config', { embeddedWalletConfig: { appName: 'Bench' } }), 200, 'PATCH /config');
  return String((await call('GET', '/auth/enclave')).body.enclaveQuorumPublic);
}

/** Challenge → encrypt the OTP with a fresh key → verify (202) → stamp → signed retry (200 session). */
async function login(call: Call, enclaveKey: string, credentialId: string): Promise<Key> {
  const challenge = await call('POST', `/auth/credentials/${credentialId}/challenge`, {});
  expectStatus(challenge, 200, 'challenge');
  const key = generateP256KeyPair();
  const encryptedOtpBundle = await encryptOtpCodeToBundle('000000', String(challenge.body.otpEncryptionTargetBundle), key.publicKeyUncompressed, enclaveKey);
  await signedRetry(call, 'POST', `/auth/credentials/${credentialId}/verify`, { type: 'EMAIL_OTP', encryptedOtpBundle }, key, 200);
  return key;
}

/**
 * A worker factory for the EMAIL_OTP verify flow. Each worker logs in to its own wallet and
 * opens a new one every LOGINS_PER_WALLET flows; opening it happens before the timed part.
 */
export async function emailOtpVerifyFlow(call: Call): Promise<() => { prepare: () => Promise<void>; flow: () => Promise<void> }> {
  const enclaveKey = await enableWallets(call);
  return () => {
    let wallet: { accountId: string; credentialId: string } | undefined;
    let used = 0;
    return {
      prepare: async () => {
        if (!wallet || used >= LOGINS_PER_WALLET) {
          wallet = await newWallet(call);
          used = 0;
        }
      },
      flow: async () => {
        used++;
        await login(call, enclaveKey, wallet!.credentialId);
      },
    };
  };
}

/** A worker factory for one signed operation: PATCH /internal-accounts/{id} (202 → stamp → 200). */
export async function signedRetryFlow(call: Call): Promise<() => { prepare: () => Promise<void>; flow: () => Promise<void> }> {
  const enclaveKey = await enableWallets(call);
  return () => {
    let session: { accountId: string; key: Key } | undefined;
    let privateEnabled = false;
    return {
      prepare: async () => {
        if (session) return;
        const wallet = await newWallet(call);
        session = { accountId: wallet.accountId, key: await login(call, enclaveKey, wallet.credentialId) };
      },
      flow: async () => {
        privateEnabled = !privateEnabled;
        await signedRetry(call, 'PATCH', `/internal-accounts/${session!.accountId}`, { privateEnabled }, session!.key, 200);
      },
    };
  };
}
