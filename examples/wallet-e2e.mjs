// End to end against a running Corridor, from the client's side, with the Turnkey client
// libraries a platform's front end would use unchanged:
//   1. turn on embedded wallets and create a customer (its wallet and EMAIL_OTP credential come with it)
//   2. log in with EMAIL_OTP: challenge, HPKE-encrypt the code with a fresh key, verify, sign, retry
//   3. one signed operation with the new session: make the wallet private
//
// Usage (sandbox platform; its OTP is always 000000):
//   CORRIDOR_URL=http://localhost:8080/2025-10-13 CORRIDOR_CLIENT_ID=... CORRIDOR_SECRET=... \
//     node examples/wallet-e2e.mjs
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { encryptOtpCodeToBundle, generateP256KeyPair } from '@turnkey/crypto';

const base = process.env.CORRIDOR_URL ?? 'http://localhost:8080/2025-10-13';
const auth = `Basic ${Buffer.from(`${process.env.CORRIDOR_CLIENT_ID}:${process.env.CORRIDOR_SECRET}`).toString('base64')}`;
const otp = process.env.CORRIDOR_OTP ?? '000000';

async function call(method, path, body, headers = {}) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: auth, 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const json = text ? JSON.parse(text) : undefined;
  if (response.status >= 400) throw new Error(`${method} ${path} → ${response.status} ${text}`);
  return { status: response.status, body: json };
}

/** The signed-retry pattern: first call → 202 challenge → stamp payloadToSign → same call with the headers. */
async function signed(method, path, body, key) {
  const first = await call(method, path, body);
  if (first.status !== 202) return first;
  const stamper = new ApiKeyStamper({ apiPublicKey: key.publicKey, apiPrivateKey: key.privateKey });
  const { stampHeaderValue } = await stamper.stamp(first.body.payloadToSign);
  return call(method, path, body, { 'service-wallet-signature': stampHeaderValue, 'request-id': first.body.requestId });
}

const { body: enclave } = await call('GET', '/auth/enclave');
await call('PATCH', '/config', { embeddedWalletConfig: { appName: 'Wallet demo' } });
const { body: customer } = await call('POST', '/customers', {
  customerType: 'INDIVIDUAL',
  fullName: 'Demo User',
  email: `demo-${Date.now()}@example.com`,
});
const { body: accounts } = await call('GET', `/customers/internal-accounts?customerId=${customer.id}&type=EMBEDDED_WALLET`);
const wallet = accounts.data[0];
const { body: credentials } = await call('GET', `/auth/credentials?accountId=${wallet.id}`);
const credential = credentials.data[0];
console.log('wallet', wallet.id, 'credential', credential.type, credential.nickname);

// Log in: the code is sealed to the enclave's target together with a fresh key pair, which
// becomes the session key once the 202 challenge is signed with it.
const { body: challenge } = await call('POST', `/auth/credentials/${credential.id}/challenge`, {});
const sessionKey = generateP256KeyPair();
const encryptedOtpBundle = await encryptOtpCodeToBundle(otp, challenge.otpEncryptionTargetBundle, sessionKey.publicKeyUncompressed, enclave.enclaveQuorumPublic);
const { body: session } = await signed('POST', `/auth/credentials/${credential.id}/verify`, { type: credential.type, encryptedOtpBundle }, sessionKey);
console.log('session', session.id, 'until', session.expiresAt);

// One signed operation with the session key.
const { body: updated } = await signed('PATCH', `/internal-accounts/${wallet.id}`, { privateEnabled: true }, sessionKey);
console.log('privateEnabled', updated.privateEnabled);
