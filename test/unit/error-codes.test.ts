import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '../../src/platform/errors.js';

/**
 * Every error code is raised where it applies: each code of the registry that belongs to a built
 * feature is asserted, with its status, by at least one test. A test "raises" a code when its
 * source asserts the pair — `expectEnvelope(response, 409, 'CODE')` or any call ending in
 * `, 409, 'CODE')` — or, for document-review codes that travel inside verification errors,
 * `code: 'CODE'`.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Codes of features not built yet, in one place. The issue that builds a feature raises its
 * codes in tests and removes them here (this file fails while a raised code is still listed).
 */
const NOT_BUILT: Record<string, ErrorCode[]> = {
  'quotes and transactions': [
    'COUNTERPARTY_NOT_ALLOWED',
    'VELOCITY_LIMIT_EXCEEDED',
  ],
  SCA: ['SCA_SESSION_REQUIRED', 'ACCOUNT_LOCKED'],
  cards: ['CARDHOLDER_KYC_NOT_APPROVED'],
  stablecoins: [
    'STABLECOIN_PROVIDER_ACCOUNT_INVALID',
    'STABLECOIN_PROVIDER_ACCOUNT_REVOKED',
    'STABLECOIN_PROVIDER_ACCOUNT_SELECTION_REQUIRED',
    'STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND',
  ],
};

/** Spec §7, code by code: the test that raises it, or the feature (listed in NOT_BUILT) that will. */
const SPEC_SECTION_7: Record<string, Record<string, string>> = {
  '7.1': {
    INVALID_INPUT: 'test/http/errors.test.ts',
    END_USER_TERMS_VERSION_NOT_FOUND: 'test/http/customers.test.ts',
    MISSING_MANDATORY_USER_INFO: 'test/http/wallet-auth.test.ts',
    INVITATION_ALREADY_CLAIMED: 'test/http/invitations.test.ts',
    INVITATIONS_NOT_CONFIGURED: 'test/http/invitations.test.ts',
    INVALID_UMA_ADDRESS: 'test/http/invitations.test.ts',
    INVITATION_CANCELLED: 'test/http/invitations.test.ts',
    QUOTE_REQUEST_FAILED: 'test/http/uma.test.ts',
    INVALID_PAYREQ_RESPONSE: 'test/http/uma.test.ts',
    INVALID_RECEIVER: 'test/http/uma.test.ts',
    PARSE_PAYREQ_RESPONSE_ERROR: 'test/http/uma.test.ts',
    CERT_CHAIN_INVALID: 'test/http/uma.test.ts',
    CERT_CHAIN_EXPIRED: 'test/http/uma.test.ts',
    INVALID_PUBKEY_FORMAT: 'test/http/uma.test.ts',
    MISSING_REQUIRED_UMA_PARAMETERS: 'test/http/uma.test.ts',
    SENDER_NOT_ACCEPTED: 'test/http/uma.test.ts',
    AMOUNT_OUT_OF_RANGE: 'test/http/sandbox-funding.test.ts',
    INVALID_CURRENCY: 'test/http/sandbox-funding.test.ts',
    INVALID_TIMESTAMP: 'test/http/uma.test.ts',
    INVALID_NONCE: 'test/http/uma.test.ts',
    INVALID_REQUEST_FORMAT: 'test/http/uma.test.ts',
    INVALID_BANK_ACCOUNT: 'test/http/external-accounts.test.ts',
    SELF_PAYMENT: 'test/http/quotes.test.ts',
    LOOKUP_REQUEST_FAILED: 'test/http/uma.test.ts',
    PARSE_LNURLP_RESPONSE_ERROR: 'test/http/uma.test.ts',
    INVALID_AMOUNT: 'test/http/quotes.test.ts',
    WEBHOOK_ENDPOINT_NOT_SET: 'test/http/webhooks.test.ts',
    WEBHOOK_DELIVERY_ERROR: 'test/http/webhooks.test.ts',
    LOW_QUALITY: 'test/http/verifications.test.ts',
    DATA_MISMATCH: 'test/http/verifications.test.ts',
    EXPIRED: 'test/http/verifications.test.ts',
    SUSPECTED_FRAUD: 'test/http/verifications.test.ts',
    UNSUITABLE_DOCUMENT: 'test/http/verifications.test.ts',
    INCOMPLETE: 'test/http/verifications.test.ts',
    EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS: 'test/http/wallet-auth.test.ts',
    SMS_OTP_CREDENTIAL_ALREADY_EXISTS: 'test/http/wallet-auth.test.ts',
    PASSKEY_CREDENTIAL_ALREADY_EXISTS: 'test/http/wallet-oauth-passkey.test.ts',
    STABLECOIN_PROVIDER_ACCOUNT_INVALID: 'stablecoins',
    STABLECOIN_PROVIDER_ACCOUNT_REVOKED: 'stablecoins',
    STABLECOIN_PROVIDER_ACCOUNT_SELECTION_REQUIRED: 'stablecoins',
    CARDHOLDER_KYC_NOT_APPROVED: 'cards',
    TRANSACTION_SIZE_LIMIT_EXCEEDED: 'test/http/quotes.test.ts',
    EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED: 'test/http/external-account-verification.test.ts',
  },
  '7.2': {
    UNAUTHORIZED: 'test/http/auth.test.ts',
    INVALID_SIGNATURE: 'test/http/uma.test.ts',
    WALLET_SIGNATURE_MISSING: 'test/http/wallet-signature-alias.test.ts',
    WALLET_SIGNATURE_MALFORMED: 'test/http/wallet-auth.test.ts',
    WALLET_SIGNATURE_BODY_MISMATCH: 'test/http/wallet-auth.test.ts',
    WALLET_SIGNATURE_INVALID: 'test/http/wallet-auth.test.ts',
    REQUEST_ID_MISSING: 'test/http/wallet-auth.test.ts',
  },
  '7.3': {
    TRANSACTION_NOT_FOUND: 'test/http/transactions.test.ts',
    INVITATION_NOT_FOUND: 'test/http/invitations.test.ts',
    USER_NOT_FOUND: 'test/http/customers.test.ts',
    QUOTE_NOT_FOUND: 'test/http/quotes.test.ts',
    LOOKUP_REQUEST_NOT_FOUND: 'test/http/uma.test.ts',
    TOKEN_NOT_FOUND: 'test/http/tokens.test.ts',
    BULK_UPLOAD_JOB_NOT_FOUND: 'test/http/bulk-customers.test.ts',
    REFERENCE_NOT_FOUND: 'test/http/documents.test.ts',
    UMA_NOT_FOUND: 'test/http/uma.test.ts',
    STABLECOIN_PROVIDER_ACCOUNT_NOT_FOUND: 'stablecoins',
  },
  '7.4': { DOCUMENT_REJECTED: 'test/http/documents.test.ts' },
  '7.5': { SERVICE_SWITCH_ERROR: 'test/http/uma.test.ts', INTERNAL_ERROR: 'test/http/errors.test.ts' },
  '7.6': {
    SCA_SESSION_REQUIRED: 'SCA',
    ACCOUNT_LOCKED: 'SCA',
    DAILY_VOLUME_LIMIT_EXCEEDED: 'test/http/quotes.test.ts',
    END_USER_TERMS_NOT_ACCEPTED: 'test/http/quotes.test.ts',
  },
};

function testSources(dir: string): Map<string, string> {
  const sources = new Map<string, string>();
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) for (const [p, text] of testSources(path)) sources.set(p, text);
    else if (entry.name.endsWith('.ts')) sources.set(relative(ROOT, path), readFileSync(path, 'utf8'));
  }
  return sources;
}

const SOURCES = testSources(join(ROOT, 'test'));
SOURCES.delete(relative(ROOT, fileURLToPath(import.meta.url)));

/** Whether `text` asserts that `code` is answered (with its registry status). */
function asserts(text: string, code: ErrorCode): boolean {
  return new RegExp(`,\\s*${ERROR_CODES[code]},\\s*'${code}'\\s*\\)`).test(text) || text.includes(`code: '${code}'`);
}

const raisedBy = (code: ErrorCode) => [...SOURCES].filter(([, text]) => asserts(text, code)).map(([path]) => path);
const notBuilt = new Map(Object.entries(NOT_BUILT).flatMap(([feature, codes]) => codes.map((code) => [code, feature] as const)));

describe('error codes', () => {
  it('raises every registry code of a built feature in some test', () => {
    const never = (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => !notBuilt.has(code) && raisedBy(code).length === 0);
    expect(never, 'codes of built features that no test raises').toEqual([]);
  });

  it('lists as not built only codes no test raises yet (remove a code here once its feature raises it)', () => {
    const raised = [...notBuilt.keys()].filter((code) => raisedBy(code).length > 0).map((code) => `${code}: ${raisedBy(code).join(', ')}`);
    expect(raised).toEqual([]);
    for (const code of notBuilt.keys()) expect(ERROR_CODES, code).toHaveProperty(code);
  });

  it('maps every code of spec §7 to the test that raises it, or to a feature not built yet', () => {
    for (const [section, codes] of Object.entries(SPEC_SECTION_7)) {
      for (const [code, where] of Object.entries(codes)) {
        expect(ERROR_CODES, `§${section} ${code} is in the registry`).toHaveProperty(code);
        if (where.startsWith('test/')) {
          expect(asserts(SOURCES.get(where) ?? '', code as ErrorCode), `§${section} ${code} is raised in ${where}`).toBe(true);
        } else {
          expect(notBuilt.get(code as ErrorCode), `§${section} ${code} belongs to ${where}`).toBe(where);
        }
      }
    }
  });
});
