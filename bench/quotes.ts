/**
 * The quote+execute flow for `npm run bench`: a customer's USD internal account pays a EUR
 * external account (cross-currency, SEPA): POST /quotes, then POST /quotes/{id}/execute (the
 * hold). Each worker sends from its own funded customer, as independent senders would.
 */
import type { Call } from './wallet.js';

function expectStatus(response: { status: number; body: unknown }, status: number, what: string) {
  if (response.status !== status) throw new Error(`${what} answered ${response.status}: ${JSON.stringify(response.body)}`);
}

let seq = 0;

export async function quoteExecuteFlow(call: Call): Promise<() => { prepare: () => Promise<void>; flow: () => Promise<void> }> {
  const payee = await call('POST', '/platform/external-accounts', {
    currency: 'EUR',
    accountInfo: { accountType: 'EUR_ACCOUNT', iban: 'DE89370400440532013000', swiftCode: 'COBADEFF', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Bench Payee', countryOfResidence: 'DE' } },
  });
  expectStatus(payee, 201, 'POST /platform/external-accounts');
  const destination = { destinationType: 'ACCOUNT', accountId: String(payee.body.id), paymentRail: 'SEPA' };
  return () => {
    let source: string | undefined;
    return {
      prepare: async () => {
        if (source) return;
        const customer = await call('POST', '/customers', {
          customerType: 'INDIVIDUAL',
          platformCustomerId: `bench-quotes-${++seq}-${Date.now()}`,
          fullName: 'Bench Sender',
          endUserTermsConsent: { acceptedAt: new Date().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' },
        });
        expectStatus(customer, 201, 'POST /customers');
        const accounts = await call('GET', `/customers/internal-accounts?customerId=${String(customer.body.id)}&type=INTERNAL_FIAT`);
        const account = String((accounts.body.data as Array<{ id: string }>)[0]!.id);
        expectStatus(await call('POST', `/sandbox/internal-accounts/${account}/fund`, { amount: 100_000_000_000 }), 200, 'fund');
        source = account;
      },
      flow: async () => {
        const quote = await call('POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: source }, destination, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_000 });
        expectStatus(quote, 201, 'POST /quotes');
        expectStatus(await call('POST', `/quotes/${String(quote.body.id)}/execute`), 200, 'POST /quotes/{id}/execute');
      },
    };
  };
}
