import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { cardPhotoJpeg } from '../helpers/document-files.js';
import { solanaWallet, validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { multipartBody, textParts, type Part } from '../helpers/multipart.js';
import { newClientKey, WalletClient } from '../helpers/wallet.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Tenant isolation, swept over openapi.json: every position of every operation that names an
 * object (path parameter, id-bearing query parameter or body field) is probed as platform A with
 * platform B's object and with a fresh id of the same type. The two answers must be the same
 * (status, code, body once the ids are masked): another platform's object is a non-existent one
 * (docs/conventions.md "Another platform's id answers 404, never 403"). Neither call may change
 * B's rows, and the foreign call may change A's rows only as the unknown one does.
 *
 * `PROBES` covers positions; a position openapi.json declares that is in neither `PROBES` nor
 * `EXEMPT` fails the coverage test, so a route added later must be probed or exempted here.
 */

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
type Json = Record<string, any>;
interface Answer {
  statusCode: number;
  body: string;
}

const openapi = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8')) as Json;
const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const ID_PATTERN = /^\^\(?[A-Z][A-Za-z|]*\)?:/;

function deref(schema: Json | undefined): Json | undefined {
  if (!schema?.$ref) return schema;
  return (schema.$ref as string)
    .replace('#/', '')
    .split('/')
    .reduce((node: Json, key) => node[key], openapi);
}

/**
 * The id-bearing positions openapi.json declares, as `METHOD /path where:name`: every path
 * parameter, and every query parameter or body field whose schema is an id pattern
 * (`^Type:<uuid>`) or whose name ends in `Id`/`Ids`.
 */
function declaredPositions(): string[] {
  const found = new Set<string>();
  const walk = (schema: Json | undefined, where: string, name: string, depth: number, add: (p: string) => void) => {
    const s = deref(schema);
    if (!s || depth > 10) return;
    if ((typeof s.pattern === 'string' && ID_PATTERN.test(s.pattern)) || /(^id|[a-z]Ids?)$/.test(name)) add(where);
    for (const key of ['oneOf', 'anyOf', 'allOf']) for (const branch of (s[key] as Json[] | undefined) ?? []) walk(branch, where, name, depth + 1, add);
    for (const [key, value] of Object.entries((s.properties as Record<string, Json> | undefined) ?? {})) walk(value, `${where}${where.endsWith(':') ? '' : '.'}${key}`, key, depth + 1, add);
    if (s.items) walk(s.items as Json, `${where}[]`, name, depth + 1, add);
  };
  for (const [path, item] of Object.entries(openapi.paths as Record<string, Json>)) {
    for (const method of HTTP_METHODS) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      const add = (where: string) => found.add(`${method.toUpperCase()} ${path} ${where}`);
      for (const parameter of [...((item.parameters as Json[]) ?? []), ...((op.parameters as Json[]) ?? [])].map((p) => deref(p)!)) {
        if (parameter.in === 'path') add(`path:${parameter.name}`);
        if (parameter.in === 'query') walk(parameter.schema as Json, `query:${parameter.name}`, parameter.name as string, 0, add);
      }
      for (const media of Object.values((op.requestBody?.content as Record<string, Json>) ?? {})) walk(media.schema as Json, 'body:', '', 0, add);
    }
  }
  return [...found].sort();
}

/** Every operation openapi.json declares, as `METHOD /path`. */
const declaredOperations = () =>
  Object.entries(openapi.paths as Record<string, Json>).flatMap(([path, item]) => HTTP_METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`));

/**
 * Declared positions not probed, each with why. Everything else the sweep must probe.
 */
const SCA_PROBED = 'modules/sca: probed in sca-not-required.test.ts (another platform\'s and an unknown id both 404, nothing written)';
const SCA_NEVER_ISSUED = 'modules/sca: SCA factor, reset and challenge ids are never issued, so no object of another platform can be named';
const EXEMPT: Record<string, string> = {
  // modules/sca: these answer 409 and write nothing; sca-not-required.test.ts probes each with another platform's
  // customer, external account and quote against an unknown one (both 404, the same code). Factor, reset and
  // challenge ids are never issued, so there is no object of B's to name.
  'DELETE /sca/factors/{credentialId} path:credentialId': SCA_NEVER_ISSUED,
  'DELETE /sca/factors/{credentialId} query:customerId': SCA_NEVER_ISSUED,
  'GET /sca/factors query:customerId': SCA_PROBED,
  'GET /sca/factors/reset/{resetId} path:resetId': SCA_NEVER_ISSUED,
  'GET /sca/factors/reset/{resetId} query:customerId': SCA_NEVER_ISSUED,
  'POST /customers/external-accounts/{externalAccountId}/trust path:externalAccountId': SCA_PROBED,
  'POST /customers/external-accounts/{externalAccountId}/trust/confirm body:challengeId': SCA_NEVER_ISSUED,
  'POST /customers/external-accounts/{externalAccountId}/trust/confirm path:externalAccountId': SCA_PROBED,
  'POST /customers/external-accounts/{externalAccountId}/untrust path:externalAccountId': SCA_PROBED,
  'POST /customers/external-accounts/{externalAccountId}/untrust/confirm body:challengeId': SCA_NEVER_ISSUED,
  'POST /customers/external-accounts/{externalAccountId}/untrust/confirm path:externalAccountId': SCA_PROBED,
  'POST /customers/{customerId}/verify-email path:customerId': SCA_PROBED,
  'POST /customers/{customerId}/verify-email/confirm path:customerId': SCA_PROBED,
  'POST /customers/{customerId}/verify-phone path:customerId': SCA_PROBED,
  'POST /customers/{customerId}/verify-phone/confirm path:customerId': SCA_PROBED,
  'POST /quotes/{quoteId}/authorize path:quoteId': SCA_PROBED,
  'POST /quotes/{quoteId}/authorize/resend path:quoteId': SCA_PROBED,
  'POST /sca/factors query:customerId': SCA_PROBED,
  'POST /sca/factors/confirm query:customerId': SCA_PROBED,
  'POST /sca/factors/reset query:customerId': SCA_PROBED,
  'POST /sca/factors/reset/{resetId}/complete path:resetId': SCA_NEVER_ISSUED,
  'POST /sca/factors/reset/{resetId}/complete query:customerId': SCA_NEVER_ISSUED,
  'POST /sca/login/complete body:challengeId': SCA_NEVER_ISSUED,
  'POST /sca/login/complete query:customerId': SCA_PROBED,
  'POST /sca/login/start query:customerId': SCA_PROBED,
  'POST /sca/record-event query:customerId': SCA_PROBED,
  // Free-text or external identifiers, not references to a Corridor object.
  'PATCH /config body:embeddedWalletConfig.passkeyRpId': 'a WebAuthn relying-party domain, not an object',
  'POST /customers body:platformCustomerId': "the platform's own label, unique per platform",
  'POST /customers body:businessInfo.taxId': 'a tax number',
  'PATCH /customers/{customerId} body:businessInfo.taxId': 'a tax number',
  'POST /customers/external-accounts body:platformAccountId': "the platform's own label for the account",
  'POST /customers/external-accounts body:accountInfo.taxId': 'a tax number',
  'POST /customers/external-accounts body:accountInfo.beneficiary.taxId': 'a tax number',
  'POST /platform/external-accounts body:platformAccountId': "the platform's own label for the account",
  'POST /platform/external-accounts body:accountInfo.taxId': 'a tax number',
  'POST /platform/external-accounts body:accountInfo.beneficiary.taxId': 'a tax number',
  'POST /auth/credentials body:attestation.credentialId': "the authenticator's WebAuthn credential id, chosen by the device",
  'POST /auth/credentials/{id}/verify body:assertion.credentialId': "the authenticator's WebAuthn credential id, chosen by the device",
  'POST /sandbox/deposits body:sender.endToEndId': "the sending bank's reference, free text",
  // Documented as shared on purpose: src/modules/invitations/README.md "Any platform may read or
  // claim an invitation by its code — the code is what is shared — but only the creating platform
  // may cancel it (403 FORBIDDEN for another, as upstream)". Asserted apart below.
  'GET /invitations/{invitationCode} path:invitationCode': 'invitations README: any platform may read an invitation by its code',
  'POST /invitations/{invitationCode}/claim path:invitationCode': 'invitations README: any platform may claim an invitation by its code',
  'POST /invitations/{invitationCode}/cancel path:invitationCode': "invitations README: another platform's cancel is 403 FORBIDDEN, as upstream",
};

/** Positions the declaration rule does not see (no id pattern, no `…Id` name) that name an object all the same. */
const EXTRA_POSITIONS = [
  'POST /sandbox/deposits body:reference',
  'POST /sandbox/uma/receive body:receiverUmaAddress',
  'POST /quotes body:destination.umaAddress',
  'POST /customers body:umaAddress',
  'PATCH /customers/{customerId} body:umaAddress',
  'POST /invitations body:inviterUma',
];

let ctx: TestContext;
let receiver: WebhookReceiver;

const call = (p: TestPlatform, method: Method, path: string, payload?: unknown, headers: Record<string, string> = {}): Promise<Answer> =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });

const form = (p: TestPlatform, method: 'POST' | 'PUT', path: string, parts: Part[]): Promise<Answer> => {
  const { payload, headers } = multipartBody(parts);
  return ctx.app.inject({ method, url: `${BASE}${path}`, headers: { ...headers, authorization: p.auth }, payload });
};

async function ok(answer: Promise<Answer>, status: number): Promise<Json> {
  const got = await answer;
  expect(got.statusCode, got.body).toBe(status);
  return JSON.parse(got.body) as Json;
}

const consent = () => ({ acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' });
const fresh = (type: string) => `${type}:${randomUUID()}`;
const passportPart = async (): Promise<Part> => ({ name: 'file', filename: 'passport.jpg', contentType: 'image/jpeg', data: await cardPhotoJpeg() });
const CSV = 'platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country\r\nbulk-1,INDIVIDUAL,Bulk Person,1990-01-15,1 Main St,Austin,TX,78701,US\r\n';

/** A surname only the customers of the platform at `domain` carry, so an answer showing it shows that platform's data. */
const nameOf = (domain: string) => `Surname${domain.split('.')[0]!.toUpperCase()}`;

/** One object of every kind on one platform. */
interface Tenant {
  p: TestPlatform;
  domain: string;
  tokenId: string;
  jobId: string;
  customer: { id: string; umaAddress: string; usd: string; reference: string };
  /** A second customer of the same platform. */
  neighbour: { id: string; umaAddress: string; usd: string; bank: string };
  business: string;
  owner: string;
  verification: string;
  document: string;
  wallet: { customerId: string; accountId: string; credentialId: string; sessionId: string };
  bank: string;
  selfCustody: string;
  platformBank: string;
  quote: string;
  fundingQuote: string;
  transaction: string;
  delivery: string;
  invitation: string;
  lookupId: string;
}

async function tenant(domain: string): Promise<Tenant> {
  const p = await ctx.newPlatform();
  await ok(call(p, 'PATCH', '/config', { umaDomain: domain, webhookEndpoint: receiver.url }), 200);
  receiver.trust(((await ok(call(p, 'GET', '/webhooks/signing-keys'), 200)).data as Array<{ publicKey: string }>).map((k) => k.publicKey));
  const wallets = new WalletClient(ctx, p);
  await wallets.enableWallets();
  const tokenId = (await ctx.newToken(p, ['VIEW'])).tokenId;

  const customerOf = async (label: string) => {
    const created = await ok(
      call(p, 'POST', '/customers', {
        customerType: 'INDIVIDUAL',
        platformCustomerId: `${label}-${randomUUID().slice(0, 8)}`,
        fullName: `${label} ${nameOf(domain)}`,
        birthDate: '1990-01-15',
        nationality: 'US',
        umaAddress: `$${label}@${domain}`,
        endUserTermsConsent: consent(),
      }),
      201,
    );
    const accounts = (await ok(call(p, 'GET', `/customers/internal-accounts?customerId=${created.id}&currency=USD`), 200)).data as Json[];
    const usd = accounts.find((a) => a.type !== 'EMBEDDED_WALLET')!;
    await ok(call(p, 'POST', `/sandbox/internal-accounts/${usd.id}/fund`, { amount: 1_000_000 }), 200);
    const bank = await ok(call(p, 'POST', '/customers/external-accounts', { customerId: created.id, ...validSamples(ctx.clock.now()).USD_ACCOUNT, ownershipType: 'FIRST_PARTY' }), 201);
    return { id: created.id as string, umaAddress: created.umaAddress as string, usd: usd.id as string, bank: bank.id as string, instructions: usd.fundingPaymentInstructions as Json[] };
  };
  const main = await customerOf('ann');
  const neighbour = await customerOf('ned');

  const business = await ok(
    call(p, 'POST', '/customers', { customerType: 'BUSINESS', platformCustomerId: `biz-${randomUUID().slice(0, 8)}`, businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789' } }),
    201,
  );
  const owner = await ok(
    call(p, 'POST', '/beneficial-owners', {
      customerId: business.id,
      roles: ['UBO'],
      ownershipPercentage: 60,
      personalInfo: { firstName: 'Maria', lastName: 'Garcia', birthDate: '1980-05-20', nationality: 'MX', address: { line1: 'Av. Reforma 1', city: 'CDMX', postalCode: '06600', country: 'MX' }, idType: 'NON_US_TAX_ID', identifier: 'GAMM800520XX1' },
    }),
    201,
  );
  const verification = await ok(call(p, 'POST', '/verifications', { customerId: business.id }), 200);
  const document = await ok(form(p, 'POST', '/documents', [...textParts({ documentHolder: main.id, documentType: 'PASSPORT', country: 'US' }), await passportPart()]), 201);
  const job = await ok(form(p, 'POST', '/customers/bulk/csv', [{ name: 'file', filename: 'customers.csv', contentType: 'text/csv', data: Buffer.from(CSV) }]), 202);

  const wallet = await wallets.newWallet();
  const { session } = await wallets.login(wallet.credentialId);

  const selfCustody = await ok(
    call(p, 'POST', '/customers/external-accounts', { customerId: main.id, currency: 'USDC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'SOLANA_WALLET', address: solanaWallet().address } }),
    201,
  );
  const platformBank = await ok(call(p, 'POST', '/platform/external-accounts', validSamples(ctx.clock.now()).EUR_ACCOUNT), 201);

  const quoteTo = (source: Json) => ok(call(p, 'POST', '/quotes', { source, destination: { destinationType: 'ACCOUNT', accountId: main.bank }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_000 }), 201);
  const quote = await quoteTo({ sourceType: 'ACCOUNT', accountId: main.usd });
  const fundingQuote = await quoteTo({ sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: main.id });
  const executed = await quoteTo({ sourceType: 'ACCOUNT', accountId: main.usd });
  await ok(call(p, 'POST', `/quotes/${executed.id}/execute`, {}), 200);

  await ok(call(p, 'POST', '/sandbox/webhooks/test'), 200);
  const delivery = ((await ok(call(p, 'GET', '/webhooks/deliveries?eventType=TEST'), 200)).data as Json[])[0]!;
  const invitation = await ok(call(p, 'POST', '/invitations', { inviterUma: main.umaAddress }), 201);
  const looked = await ok(call(p, 'GET', `/receiver/uma/${encodeURIComponent('$success.usd@sandbox.uma.money')}?customerId=${main.id}`), 200);

  return {
    p,
    domain,
    tokenId,
    jobId: job.jobId as string,
    customer: { id: main.id, umaAddress: main.umaAddress, usd: main.usd, reference: main.instructions[0]!.accountOrWalletInfo.reference as string },
    neighbour: { id: neighbour.id, umaAddress: neighbour.umaAddress, usd: neighbour.usd, bank: neighbour.bank },
    business: business.id as string,
    owner: owner.id as string,
    verification: verification.id as string,
    document: document.id as string,
    wallet: { customerId: wallet.customerId, accountId: wallet.accountId, credentialId: wallet.credentialId, sessionId: session.id },
    bank: main.bank,
    selfCustody: selfCustody.id as string,
    platformBank: platformBank.id as string,
    quote: quote.id as string,
    fundingQuote: fundingQuote.id as string,
    transaction: executed.transactionId as string,
    delivery: delivery.id as string,
    invitation: invitation.code as string,
    lookupId: looked.lookupId as string,
  };
}

/** Platform B: its objects, its customer's own label and a deposit id it used. */
type Victim = Tenant & { customerLabel: string; depositId: string };

/**
 * One probe: `send` makes the call as platform A (`a`) with `id` in the probed position;
 * `foreign` picks the object that must look non-existent (B's, or for customer-scoped routes
 * another customer's of A), `unknown` a fresh id of the same type.
 */
interface Probe {
  position: string;
  /** Which object `foreign` is, when a position has more than one probe. */
  as?: string;
  foreign: (b: Victim, a: Tenant) => string;
  unknown: () => string;
  send: (a: Tenant, id: string) => Promise<Answer>;
}

const probe = (position: string, type: string, foreign: Probe['foreign'], send: Probe['send'], as?: string): Probe => ({
  position,
  foreign,
  unknown: () => fresh(type),
  send,
  ...(as ? { as } : {}),
});

/** The path of `position` with `id` in its one path parameter. */
const pathWith = (position: string, id: string) => position.split(' ')[1]!.replace(/\{[^}]+\}/, encodeURIComponent(id));

/** A probe of a path parameter: the route called with `id` there, and `body` (or none). */
const pathProbe = (position: string, type: string, foreign: Probe['foreign'], body?: (a: Tenant) => unknown, headers: Record<string, string> = {}): Probe =>
  probe(position, type, foreign, (a, id) => call(a.p, position.split(' ')[0] as Method, pathWith(position, id), body?.(a), headers));

const EXECUTE_KEY = () => ({ 'idempotency-key': randomUUID() });

const PROBES: Probe[] = [
  pathProbe('GET /tokens/{tokenId} path:tokenId', 'Token', (b) => b.tokenId),
  pathProbe('DELETE /tokens/{tokenId} path:tokenId', 'Token', (b) => b.tokenId),
  pathProbe('GET /customers/bulk/jobs/{jobId}/errors path:jobId', 'Job', (b) => b.jobId),
  pathProbe('GET /customers/bulk/jobs/{jobId} path:jobId', 'Job', (b) => b.jobId),
  pathProbe('GET /customers/{customerId} path:customerId', 'Customer', (b) => b.customer.id),
  pathProbe('PATCH /customers/{customerId} path:customerId', 'Customer', (b) => b.customer.id, () => ({ fullName: 'Overwritten' })),
  pathProbe('DELETE /customers/{customerId} path:customerId', 'Customer', (b) => b.neighbour.id),
  pathProbe('POST /customers/{customerId}/kyc-link path:customerId', 'Customer', (b) => b.customer.id, () => ({})),
  pathProbe('PATCH /internal-accounts/{id} path:id', 'InternalAccount', (b) => b.wallet.accountId, () => ({ privateEnabled: true })),
  pathProbe('POST /internal-accounts/{id}/export path:id', 'InternalAccount', (b) => b.wallet.accountId, () => ({ clientPublicKey: newClientKey().publicKeyUncompressed })),
  pathProbe('POST /sandbox/internal-accounts/{accountId}/fund path:accountId', 'InternalAccount', (b) => b.customer.usd, () => ({ amount: 100 })),
  pathProbe('POST /auth/credentials/{id}/challenge path:id', 'AuthMethod', (b) => b.wallet.credentialId, () => ({})),
  pathProbe('POST /auth/credentials/{id}/verify path:id', 'AuthMethod', (b) => b.wallet.credentialId, () => ({ type: 'EMAIL_OTP', encryptedOtpBundle: '{"encappedPublic":"00","ciphertext":"00"}' })),
  pathProbe('DELETE /auth/credentials/{id} path:id', 'AuthMethod', (b) => b.wallet.credentialId),
  pathProbe('DELETE /auth/sessions/{id} path:id', 'Session', (b) => b.wallet.sessionId),
  pathProbe('POST /auth/sessions/{id}/refresh path:id', 'Session', (b) => b.wallet.sessionId, () => ({ clientPublicKey: newClientKey().publicKey })),
  pathProbe('GET /beneficial-owners/{beneficialOwnerId} path:beneficialOwnerId', 'BeneficialOwner', (b) => b.owner),
  pathProbe('PATCH /beneficial-owners/{beneficialOwnerId} path:beneficialOwnerId', 'BeneficialOwner', (b) => b.owner, () => ({ ownershipPercentage: 10 })),
  pathProbe('GET /verifications/{verificationId} path:verificationId', 'Verification', (b) => b.verification),
  pathProbe('POST /sandbox/verifications/{verificationId}/manual-review path:verificationId', 'Verification', (b) => b.verification, () => ({ verificationStatus: 'APPROVED' })),
  pathProbe('GET /webhooks/deliveries/{webhookId} path:webhookId', 'Webhook', (b) => b.delivery),
  pathProbe('POST /webhooks/deliveries/{webhookId}/resend path:webhookId', 'Webhook', (b) => b.delivery),
  pathProbe('GET /documents/{documentId} path:documentId', 'Document', (b) => b.document),
  probe('PUT /documents/{documentId} path:documentId', 'Document', (b) => b.document, async (a, id) =>
    form(a.p, 'PUT', `/documents/${id}`, [...textParts({ documentType: 'PASSPORT', country: 'US' }), await passportPart()]),
  ),
  pathProbe('DELETE /documents/{documentId} path:documentId', 'Document', (b) => b.document),
  pathProbe('GET /quotes/{quoteId} path:quoteId', 'Quote', (b) => b.quote),
  pathProbe('POST /quotes/{quoteId}/execute path:quoteId', 'Quote', (b) => b.quote, () => ({}), EXECUTE_KEY()),
  pathProbe('GET /customers/external-accounts/{externalAccountId} path:externalAccountId', 'ExternalAccount', (b) => b.bank),
  pathProbe('DELETE /customers/external-accounts/{externalAccountId} path:externalAccountId', 'ExternalAccount', (b) => b.bank),
  pathProbe('POST /customers/external-accounts/{externalAccountId}/challenge path:externalAccountId', 'ExternalAccount', (b) => b.selfCustody, () => ({ method: 'WALLET_SIGNATURE' })),
  pathProbe('POST /customers/external-accounts/{externalAccountId}/verify path:externalAccountId', 'ExternalAccount', (b) => b.selfCustody, () => ({ signature: '1111' })),
  pathProbe('GET /platform/external-accounts/{externalAccountId} path:externalAccountId', 'ExternalAccount', (b) => b.platformBank),
  pathProbe('DELETE /platform/external-accounts/{externalAccountId} path:externalAccountId', 'ExternalAccount', (b) => b.platformBank),
  pathProbe('POST /platform/external-accounts/{externalAccountId}/challenge path:externalAccountId', 'ExternalAccount', (b) => b.platformBank, () => ({ method: 'WALLET_SIGNATURE' })),
  pathProbe('POST /platform/external-accounts/{externalAccountId}/verify path:externalAccountId', 'ExternalAccount', (b) => b.platformBank, () => ({ signature: '1111' })),
  pathProbe('GET /receiver/external-account/{accountId} path:accountId', 'ExternalAccount', (b) => b.bank),
  pathProbe('GET /transactions/{transactionId} path:transactionId', 'Transaction', (b) => b.transaction),
  pathProbe('POST /transactions/{transactionId}/cancel path:transactionId', 'Transaction', (b) => b.transaction, () => ({}), EXECUTE_KEY()),
  pathProbe('POST /transactions/{transactionId}/confirm path:transactionId', 'Transaction', (b) => b.transaction, () => ({})),
  pathProbe('POST /transactions/{transactionId}/approve path:transactionId', 'Transaction', (b) => b.transaction, () => ({})),
  pathProbe('POST /transactions/{transactionId}/reject path:transactionId', 'Transaction', (b) => b.transaction, () => ({})),
  pathProbe('POST /sandbox/transactions/{transactionId}/refund path:transactionId', 'Transaction', (b) => b.transaction),
  // A UMA address names a customer: B's must look like an unknown address at B's domain.
  {
    position: 'GET /receiver/uma/{receiverUmaAddress} path:receiverUmaAddress',
    foreign: (b) => b.customer.umaAddress,
    unknown: () => `$nobody${randomUUID().slice(0, 6)}@${b().domain}`,
    send: (a, address) => call(a.p, 'GET', `/receiver/uma/${encodeURIComponent(address)}?customerId=${a.customer.id}`),
  },

  // Query parameters.
  probe('GET /customers/internal-accounts query:customerId', 'Customer', (b) => b.customer.id, (a, id) => call(a.p, 'GET', `/customers/internal-accounts?customerId=${id}`)),
  probe('GET /auth/credentials query:accountId', 'InternalAccount', (b) => b.wallet.accountId, (a, id) => call(a.p, 'GET', `/auth/credentials?accountId=${id}`)),
  probe('GET /auth/sessions query:accountId', 'InternalAccount', (b) => b.wallet.accountId, (a, id) => call(a.p, 'GET', `/auth/sessions?accountId=${id}`)),
  probe('GET /beneficial-owners query:customerId', 'Customer', (b) => b.business, (a, id) => call(a.p, 'GET', `/beneficial-owners?customerId=${id}`)),
  probe('GET /verifications query:customerId', 'Customer', (b) => b.business, (a, id) => call(a.p, 'GET', `/verifications?customerId=${id}`)),
  probe('GET /documents query:documentHolder', 'Customer', (b) => b.customer.id, (a, id) => call(a.p, 'GET', `/documents?documentHolder=${id}`)),
  probe('GET /documents query:documentHolder', 'BeneficialOwner', (b) => b.owner, (a, id) => call(a.p, 'GET', `/documents?documentHolder=${id}`), 'beneficial owner'),
  probe('GET /customers/external-accounts query:customerId', 'Customer', (b) => b.customer.id, (a, id) => call(a.p, 'GET', `/customers/external-accounts?customerId=${id}`)),
  probe('GET /receiver/uma/{receiverUmaAddress} query:customerId', 'Customer', (b) => b.customer.id, (a, id) => call(a.p, 'GET', `/receiver/uma/${encodeURIComponent('$success.usd@sandbox.uma.money')}?customerId=${id}`)),
  probe('GET /receiver/external-account/{accountId} query:customerId', 'Customer', (b) => b.customer.id, (a, id) => call(a.p, 'GET', `/receiver/external-account/${a.bank}?customerId=${id}`)),
  probe('GET /transactions query:customerId', 'Customer', (b) => b.customer.id, (a, id) => call(a.p, 'GET', `/transactions?customerId=${id}`)),
  // platformCustomerId is the platform's own label: B's must filter A's list to nothing, as an unused one.
  {
    position: 'GET /customers query:platformCustomerId',
    foreign: (b) => b.customerLabel,
    unknown: () => `nobody-${randomUUID()}`,
    send: (a, label) => call(a.p, 'GET', `/customers?platformCustomerId=${encodeURIComponent(label)}`),
  },
  {
    position: 'GET /customers/kyc-link query:platformCustomerId',
    foreign: (b) => b.customerLabel,
    unknown: () => `nobody-${randomUUID()}`,
    send: (a, label) => call(a.p, 'GET', `/customers/kyc-link?platformCustomerId=${encodeURIComponent(label)}`),
  },
  {
    position: 'GET /transactions query:platformCustomerId',
    foreign: (b) => b.customerLabel,
    unknown: () => `nobody-${randomUUID()}`,
    send: (a, label) => call(a.p, 'GET', `/transactions?platformCustomerId=${encodeURIComponent(label)}`),
  },

  // Body fields.
  probe('POST /auth/credentials body:accountId', 'InternalAccount', (b) => b.wallet.accountId, (a, id) => call(a.p, 'POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: id })),
  probe('POST /beneficial-owners body:customerId', 'Customer', (b) => b.business, (a, id) =>
    call(a.p, 'POST', '/beneficial-owners', {
      customerId: id,
      roles: ['DIRECTOR'],
      ownershipPercentage: 0,
      personalInfo: { firstName: 'Eve', lastName: 'Intruder', birthDate: '1980-05-20', nationality: 'US', address: { line1: '1 St', city: 'Austin', postalCode: '78701', country: 'US' }, idType: 'SSN', identifier: '123-45-6789' },
    }),
  ),
  probe('POST /verifications body:customerId', 'Customer', (b) => b.business, (a, id) => call(a.p, 'POST', '/verifications', { customerId: id })),
  probe('POST /documents body:documentHolder', 'Customer', (b) => b.customer.id, async (a, id) =>
    form(a.p, 'POST', '/documents', [...textParts({ documentHolder: id, documentType: 'PASSPORT', country: 'US' }), await passportPart()]),
  ),
  probe(
    'POST /documents body:documentHolder',
    'BeneficialOwner',
    (b) => b.owner,
    async (a, id) => form(a.p, 'POST', '/documents', [...textParts({ documentHolder: id, documentType: 'PASSPORT', country: 'MX' }), await passportPart()]),
    'beneficial owner',
  ),
  probe('POST /customers/external-accounts body:customerId', 'Customer', (b) => b.customer.id, (a, id) => call(a.p, 'POST', '/customers/external-accounts', { customerId: id, ...validSamples(ctx.clock.now()).GBP_ACCOUNT })),
  probe('POST /quotes body:source.accountId', 'InternalAccount', (b) => b.customer.usd, (a, id) =>
    call(a.p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: id }, destination: { destinationType: 'ACCOUNT', accountId: a.bank }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_000 }),
  ),
  probe(
    'POST /quotes body:source.accountId',
    'ExternalAccount',
    (b) => b.bank,
    (a, id) => call(a.p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: id }, destination: { destinationType: 'ACCOUNT', accountId: a.customer.usd }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_000 }),
    'external source',
  ),
  probe('POST /quotes body:source.customerId', 'Customer', (b) => b.customer.id, (a, id) =>
    call(a.p, 'POST', '/quotes', { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: id }, destination: { destinationType: 'ACCOUNT', accountId: a.bank }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_000 }),
  ),
  probe('POST /quotes body:destination.accountId', 'ExternalAccount', (b) => b.bank, (a, id) =>
    call(a.p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: a.customer.usd }, destination: { destinationType: 'ACCOUNT', accountId: id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_000 }),
  ),
  probe(
    'POST /quotes body:destination.accountId',
    'InternalAccount',
    (b) => b.customer.usd,
    (a, id) => call(a.p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: a.customer.usd }, destination: { destinationType: 'ACCOUNT', accountId: id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_000 }),
    'internal destination',
  ),
  // A customer pays to its own external accounts or the platform's: another customer's is as
  // unknown as another platform's (docs/quotes.md). Book transfers to another customer's
  // *internal* account are a documented choice (transactions.test.ts) and not probed.
  probe(
    'POST /quotes body:destination.accountId',
    'ExternalAccount',
    (_b, a) => a.neighbour.bank,
    (a, id) => call(a.p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: a.customer.usd }, destination: { destinationType: 'ACCOUNT', accountId: id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_000 }),
    "another customer's external account",
  ),
  {
    position: 'POST /quotes body:lookupId',
    foreign: (b) => b.lookupId,
    unknown: () => fresh('Lookup'),
    send: (a, id) =>
      call(a.p, 'POST', '/quotes', {
        lookupId: id,
        source: { sourceType: 'ACCOUNT', accountId: a.customer.usd },
        destination: { destinationType: 'UMA_ADDRESS', umaAddress: '$success.usd@sandbox.uma.money', currency: 'USD' },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: 1_000,
      }),
  },
  // A UMA destination is resolved through A's own lookup: B's customer's address is asked of its
  // VASP like any other, so the probe is the lookup's (GET /receiver/uma) and this one checks the
  // quote refuses a lookup of another address in the same way for both.
  {
    position: 'POST /quotes body:destination.umaAddress',
    foreign: (b) => b.customer.umaAddress,
    unknown: () => `$nobody${randomUUID().slice(0, 6)}@${b().domain}`,
    send: (a, address) =>
      call(a.p, 'POST', '/quotes', {
        lookupId: a.lookupId,
        source: { sourceType: 'ACCOUNT', accountId: a.customer.usd },
        destination: { destinationType: 'UMA_ADDRESS', umaAddress: address, currency: 'USD' },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: 1_000,
      }),
  },
  probe('POST /transfer-in body:source.accountId', 'ExternalAccount', (b) => b.bank, (a, id) =>
    call(a.p, 'POST', '/transfer-in', { source: { accountId: id }, destination: { accountId: a.customer.usd }, amount: 1_000 }, EXECUTE_KEY()),
  ),
  // transfers README: "an external account of another customer is 404 REFERENCE_NOT_FOUND".
  probe(
    'POST /transfer-in body:source.accountId',
    'ExternalAccount',
    (_b, a) => a.neighbour.bank,
    (a, id) => call(a.p, 'POST', '/transfer-in', { source: { accountId: id }, destination: { accountId: a.customer.usd }, amount: 1_000 }, EXECUTE_KEY()),
    "another customer's external account",
  ),
  probe('POST /transfer-in body:destination.accountId', 'InternalAccount', (b) => b.customer.usd, (a, id) =>
    call(a.p, 'POST', '/transfer-in', { source: { accountId: a.bank }, destination: { accountId: id }, amount: 1_000 }, EXECUTE_KEY()),
  ),
  probe('POST /transfer-out body:source.accountId', 'InternalAccount', (b) => b.customer.usd, (a, id) =>
    call(a.p, 'POST', '/transfer-out', { source: { accountId: id }, destination: { accountId: a.bank }, amount: 1_000 }, EXECUTE_KEY()),
  ),
  probe('POST /transfer-out body:destination.accountId', 'ExternalAccount', (b) => b.bank, (a, id) =>
    call(a.p, 'POST', '/transfer-out', { source: { accountId: a.customer.usd }, destination: { accountId: id }, amount: 1_000 }, EXECUTE_KEY()),
  ),
  // The same through transfer-out, which would otherwise execute at once.
  probe(
    'POST /transfer-out body:destination.accountId',
    'ExternalAccount',
    (_b, a) => a.neighbour.bank,
    (a, id) => call(a.p, 'POST', '/transfer-out', { source: { accountId: a.customer.usd }, destination: { accountId: id }, amount: 1_000 }, EXECUTE_KEY()),
    "another customer's external account",
  ),
  probe('POST /crypto/estimate-withdrawal-fee body:internalAccountId', 'InternalAccount', (b) => b.wallet.accountId, (a, id) =>
    call(a.p, 'POST', '/crypto/estimate-withdrawal-fee', { internalAccountId: id, currency: 'USDC', cryptoNetwork: 'SOLANA', amount: 1_000_000, destinationAddress: solanaWallet().address }),
  ),
  probe('POST /sandbox/send body:quoteId', 'Quote', (b) => b.fundingQuote, (a, id) => call(a.p, 'POST', '/sandbox/send', { quoteId: id, currencyCode: 'USD' }, EXECUTE_KEY())),
  probe('POST /sandbox/uma/receive body:customerId', 'Customer', (b) => b.customer.id, (a, id) =>
    call(a.p, 'POST', '/sandbox/uma/receive', { senderUmaAddress: '$success.usd@sandbox.uma.money', customerId: id, receivingCurrencyCode: 'USD', receivingCurrencyAmount: 1_000 }),
  ),
  {
    position: 'POST /sandbox/uma/receive body:receiverUmaAddress',
    foreign: (b) => b.customer.umaAddress,
    unknown: () => `$nobody${randomUUID().slice(0, 6)}@${b().domain}`,
    send: (a, address) => call(a.p, 'POST', '/sandbox/uma/receive', { senderUmaAddress: '$success.usd@sandbox.uma.money', receiverUmaAddress: address, receivingCurrencyCode: 'USD', receivingCurrencyAmount: 1_000 }),
  },
  // A UMA address names a customer too: B's, given to A's writes, must be taken as an unused address
  // at B's domain is (not a 409 that tells it is taken). Customers' addresses are unique per
  // platform (customers README), so A may give its own customers these addresses: the invitation
  // probe runs before A has one, and the two customer probes use two different addresses of B's.
  {
    position: 'POST /invitations body:inviterUma',
    foreign: (b) => b.customer.umaAddress,
    unknown: () => `$nobody${randomUUID().slice(0, 6)}@${b().domain}`,
    send: (a, address) => call(a.p, 'POST', '/invitations', { inviterUma: address }),
  },
  {
    position: 'POST /customers body:umaAddress',
    foreign: (b) => b.customer.umaAddress,
    unknown: () => `$nobody${randomUUID().slice(0, 6)}@${b().domain}`,
    send: (a, address) => call(a.p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Uma Probe', umaAddress: address }),
  },
  {
    position: 'PATCH /customers/{customerId} body:umaAddress',
    foreign: (b) => b.neighbour.umaAddress,
    unknown: () => `$nobody${randomUUID().slice(0, 6)}@${b().domain}`,
    send: (a, address) => call(a.p, 'PATCH', `/customers/${a.neighbour.id}`, { customerType: 'INDIVIDUAL', umaAddress: address }),
  },
  {
    position: 'POST /sandbox/deposits body:reference',
    foreign: (b) => b.customer.reference,
    unknown: () => `CDR${randomUUID().replace(/-/g, '').slice(0, 13).toUpperCase()}`,
    send: (a, reference) => call(a.p, 'POST', '/sandbox/deposits', { reference, amount: 500 }, EXECUTE_KEY()),
  },
  // The rail's deposit id dedupes deposits: B's must not answer B's transaction to A.
  {
    position: 'POST /sandbox/deposits body:depositId',
    foreign: (b) => b.depositId,
    unknown: () => `wire-${randomUUID()}`,
    send: (a, depositId) => call(a.p, 'POST', '/sandbox/deposits', { reference: a.customer.reference, amount: 500, depositId }, EXECUTE_KEY()),
  },
];

let platformA: Tenant;
let platformB: Victim;
const b = () => platformB;

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  ctx = await createTestContext();
  platformA = await tenant('a.example.com');
  const made = await tenant('b.example.com');
  const customerLabel = ((await ok(call(made.p, 'GET', `/customers/${made.customer.id}`), 200)) as Json).platformCustomerId as string;
  const depositId = `wire-${randomUUID()}`;
  await ok(call(made.p, 'POST', '/sandbox/deposits', { reference: made.customer.reference, amount: 700, depositId }), 200);
  platformB = { ...made, customerLabel, depositId };
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await ctx?.close();
});

/** Tables holding a platform's rows (a `platform_id` column), in the test's schema. */
async function platformTables(): Promise<string[]> {
  const rows = await sql<{ table_name: string }>`
    select table_name from information_schema.columns
    where column_name = 'platform_id' and table_schema = current_schema()
    order by table_name`.execute(ctx.handle.db);
  // Kept counts live in one row per platform, table and slot, a slot per backend (migration 0009):
  // how many rows exist says which pooled connection wrote, not what was written.
  return rows.rows.map((r) => r.table_name).filter((table) => table !== 'platform_row_counts');
}

/** Per table: how many rows `platform` has, and a digest of their contents. */
async function footprint(tables: string[], platformUuid: string): Promise<Record<string, string>> {
  const parts = tables.map((t) => sql`select ${t}::text as t, count(*)::text || ':' || coalesce(md5(string_agg(x::text, '|' order by x::text)), '') as v from ${sql.table(t)} x where x.platform_id::text = ${platformUuid}`);
  const rows = await sql<{ t: string; v: string }>`${sql.join(parts, sql` union all `)}`.execute(ctx.handle.db);
  return Object.fromEntries(rows.rows.map((r) => [r.t, r.v]));
}

/** How many rows `platform` has per table. */
const counts = async (tables: string[], platformUuid: string) => Object.fromEntries(Object.entries(await footprint(tables, platformUuid)).map(([t, v]) => [t, Number(v.split(':')[0])]));
const delta = (before: Record<string, number>, after: Record<string, number>) => Object.fromEntries(Object.keys(after).filter((t) => after[t] !== before[t]).map((t) => [t, after[t]! - before[t]!]));

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';

/** An answer with the probed id, every other id and every timestamp masked: what is left must not tell the two ids apart. */
function masked(answer: Answer, id: string): { status: number; body: unknown } {
  let text = answer.body.split(id).join('<probed>').split(encodeURIComponent(id)).join('<probed>');
  text = text.replace(new RegExp(`([A-Za-z]+:)?${UUID}`, 'g'), '$1<id>').replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g, '<time>');
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (an empty 204): compared as text.
  }
  return { status: answer.statusCode, body };
}

/** Every id and name of B's that A must never be shown. */
function secretsOf(t: Tenant): string[] {
  const values = [t.tokenId, t.jobId, t.customer.id, t.customer.usd, t.neighbour.id, t.neighbour.usd, t.neighbour.bank, t.business, t.owner, t.verification, t.document, t.bank, t.selfCustody, t.platformBank, t.quote, t.fundingQuote, t.transaction, t.delivery, t.lookupId, ...Object.values(t.wallet)];
  return [...values, nameOf(t.domain), t.p.uuid];
}

/** B's objects as B reads them. */
async function snapshotOf(t: Tenant): Promise<Json> {
  const paths = [
    `/tokens/${t.tokenId}`,
    `/customers/bulk/jobs/${t.jobId}`,
    `/customers/${t.customer.id}`,
    `/customers/${t.neighbour.id}`,
    `/customers/${t.business}`,
    `/customers/internal-accounts?customerId=${t.customer.id}`,
    `/customers/internal-accounts?customerId=${t.wallet.customerId}`,
    `/auth/credentials?accountId=${t.wallet.accountId}`,
    `/auth/sessions?accountId=${t.wallet.accountId}`,
    `/beneficial-owners/${t.owner}`,
    `/verifications/${t.verification}`,
    `/documents/${t.document}`,
    `/customers/external-accounts/${t.bank}`,
    `/customers/external-accounts/${t.selfCustody}`,
    `/platform/external-accounts/${t.platformBank}`,
    `/quotes/${t.quote}`,
    `/quotes/${t.fundingQuote}`,
    `/transactions/${t.transaction}`,
    `/transactions?customerId=${t.customer.id}`,
    `/webhooks/deliveries/${t.delivery}`,
    `/invitations/${t.invitation}`,
    '/config',
  ];
  const out: Json = {};
  for (const path of paths) out[path] = await ok(call(t.p, 'GET', path), 200);
  return out;
}

describe('tenant isolation over every id-bearing position of openapi.json', () => {
  it('covers every declared position: probed here or exempted with a reason', () => {
    const probed = new Set(PROBES.map((p) => p.position));
    const declared = new Set([...declaredPositions(), ...EXTRA_POSITIONS]);
    const uncovered = [...declared].filter((p) => !probed.has(p) && !(p in EXEMPT));
    expect(uncovered, 'positions neither probed nor exempted').toEqual([]);
    // Nothing probed or exempted that openapi.json no longer declares (a renamed route or field).
    const stale = [...probed, ...Object.keys(EXEMPT)].filter((p) => !declared.has(p));
    expect(stale, 'probes of positions openapi.json does not declare').toEqual([]);
  });

  let before: Json;
  let tables: string[];

  describe('as another platform (or, where marked, another customer of the same platform)', () => {
    beforeAll(async () => {
      tables = await platformTables();
      before = await snapshotOf(platformB);
    });

    it.each(PROBES.map((p) => [`${p.position}${p.as ? ` (${p.as})` : ''}`, p] as const))('%s', async (_, p) => {
      const a = platformA;
      const bFootprint = await footprint(tables, platformB.p.uuid);
      const unknownId = p.unknown();
      const foreignId = p.foreign(platformB, a);
      const aBefore = await counts(tables, a.p.uuid);
      const unknown = await p.send(a, unknownId);
      const aBetween = await counts(tables, a.p.uuid);
      const foreign = await p.send(a, foreignId);
      const aAfter = await counts(tables, a.p.uuid);

      expect([403, 409, 500], `${foreign.statusCode} ${foreign.body}`).not.toContain(foreign.statusCode);
      expect(masked(foreign, foreignId), 'the foreign id answers as an unknown one').toEqual(masked(unknown, unknownId));
      const shown = secretsOf(platformB).filter((s) => s !== foreignId && foreign.body.includes(s));
      expect(shown, "B's data in the answer").toEqual([]);
      expect(await footprint(tables, platformB.p.uuid), "B's rows").toEqual(bFootprint);
      expect(delta(aBetween, aAfter), "A's rows change as for an unknown id").toEqual(delta(aBefore, aBetween));
    });

    it("leaves B's objects as they were, and the ledger balanced", async () => {
      expect(await snapshotOf(platformB)).toEqual(before);
      await expectLedgerConsistent(ctx.handle.db);
    });
  });

  // Reads that take no id (lists, config, keys, clock…) answer A's own data only.
  it.each(declaredOperations().filter((op) => op.startsWith('GET ') && !op.includes('{')))('%s shows A nothing of B', async (op) => {
    const [, path] = op.split(' ') as [string, string];
    const takesLimit = ((openapi.paths[path].get.parameters as Json[] | undefined) ?? []).some((parameter) => deref(parameter)!.name === 'limit');
    const answer = await call(platformA.p, 'GET', takesLimit ? `${path}?limit=100` : path);
    expect(answer.statusCode, answer.body).not.toBe(500);
    expect(secretsOf(platformB).filter((secret) => answer.body.includes(secret))).toEqual([]);
  });

  it('shares invitations by code as documented: readable by any platform, cancelled only by its creator (403)', async () => {
    const read = await ok(call(platformA.p, 'GET', `/invitations/${platformB.invitation}`), 200);
    expect(read).toMatchObject({ code: platformB.invitation, status: 'PENDING' });
    expect((await call(platformA.p, 'POST', `/invitations/${platformB.invitation}/cancel`)).statusCode).toBe(403);
    expect(await ok(call(platformB.p, 'GET', `/invitations/${platformB.invitation}`), 200)).toEqual(read);
  });
});
