// A first cross-border payment against a running sandbox Corridor, from the platform's backend,
// with nothing but fetch:
//   1. a customer who accepted the end-user terms (a sandbox customer is approved at once), and
//      its USD internal account (INTERNAL_FIAT: an EMBEDDED_WALLET pays only with a wallet
//      session's signature, see wallet-e2e.mjs), funded from the sandbox
//   2. the customer's EUR bank account (an IBAN) to pay out to
//   3. a quote: send 100.00 USD, the receiver gets EUR at the quoted rate, fees included
//   4. execute it: the amount leaves the available balance at once, and the payment is submitted
//      to the (simulated) SEPA Instant rail
//   5. move the sandbox clock past SEPA Instant's settlement time: the payment completes
//
// Usage (sandbox platform):
//   CORRIDOR_URL=http://localhost:8080/2025-10-13 CORRIDOR_CLIENT_ID=... CORRIDOR_SECRET=... \
//     node examples/first-payment.mjs
import { randomUUID } from 'node:crypto';

const base = process.env.CORRIDOR_URL ?? 'http://localhost:8080/2025-10-13';
const auth = `Basic ${Buffer.from(`${process.env.CORRIDOR_CLIENT_ID}:${process.env.CORRIDOR_SECRET}`).toString('base64')}`;

async function call(method, path, body, headers = {}) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status >= 400) throw new Error(`${method} ${path} → ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

const money = ({ amount, currency }) => `${(amount / 10 ** currency.decimals).toFixed(currency.decimals)} ${currency.code}`;

// 1. The customer, its USD account, and 1,000.00 USD of sandbox money in it.
const customer = await call('POST', '/customers', {
  customerType: 'INDIVIDUAL',
  platformCustomerId: `first-payment-${randomUUID()}`,
  fullName: 'Ada Lovelace',
  email: 'ada@example.com',
  endUserTermsConsent: { acceptedAt: new Date().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' },
});
const usdAccount = async () => (await call('GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD&type=INTERNAL_FIAT`)).data[0];
const { id: accountId } = await usdAccount();
await call('POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount: 100_000 });

// 2. Where the money goes: the customer's own EUR account.
const iban = await call('POST', '/customers/external-accounts', {
  customerId: customer.id,
  currency: 'EUR',
  accountInfo: {
    accountType: 'EUR_ACCOUNT',
    iban: 'DE89370400440532013000',
    swiftCode: 'COBADEFF',
    beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Ada Lovelace', countryOfResidence: 'DE' },
  },
});

// 3. The price, fixed until expiresAt. The Idempotency-Key makes a retried request safe.
const quote = await call(
  'POST',
  '/quotes',
  {
    source: { sourceType: 'ACCOUNT', accountId },
    destination: { destinationType: 'ACCOUNT', accountId: iban.id, paymentRail: 'SEPA_INSTANT' },
    lockedCurrencySide: 'SENDING',
    lockedCurrencyAmount: 10_000,
    description: 'First payment',
  },
  { 'idempotency-key': randomUUID() },
);
console.log(
  `quote ${quote.id}: send ${money({ amount: quote.totalSendingAmount, currency: quote.sendingCurrency })}, ` +
    `receive ${money({ amount: quote.totalReceivingAmount, currency: quote.receivingCurrency })} ` +
    `(rate ${quote.exchangeRate}, fees ${money({ amount: quote.feesIncluded, currency: quote.sendingCurrency })}), until ${quote.expiresAt}`,
);

// 4. Execute: the transaction starts and the amount is taken from the available balance.
await call('POST', `/quotes/${quote.id}/execute`);
const { status } = await call('GET', `/transactions/${quote.transactionId}`);
console.log(`executed ${quote.transactionId}: ${status}, available ${money((await usdAccount()).balance)}`);

// 5. Sandbox time: SEPA Instant settles 10 seconds after submission; move the platform's clock past it.
await call('POST', '/sandbox/clock/advance', { seconds: 15 });
let transaction;
for (let attempt = 0; attempt < 100; attempt++) {
  transaction = await call('GET', `/transactions/${quote.transactionId}`);
  if (transaction.status === 'COMPLETED' || transaction.status === 'FAILED') break;
  await new Promise((resolve) => setTimeout(resolve, 200));
}
const settled = await usdAccount();
console.log(`${transaction.status}: available ${money(settled.balance)}, total ${money(settled.totalBalance)}`);
if (transaction.status !== 'COMPLETED') process.exit(1);
