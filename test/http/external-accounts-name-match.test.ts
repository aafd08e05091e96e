import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InstitutionDirectory } from '../../src/modules/external-accounts/index.js';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';

/** The production institution: answers the name on record the test sets. */
let onRecord = '';
const institution: InstitutionDirectory = { holderName: async () => onRecord };

let ctx: TestContext;
let production: TestPlatform;
beforeAll(async () => {
  ctx = await createTestContext({ institutions: { production: institution } });
  production = await ctx.newPlatform('production');
});
afterAll(() => ctx.close());

let seq = 0;
async function check(beneficiary: Record<string, unknown>, record: string): Promise<string> {
  onRecord = record;
  const accountNumber = `${String(Date.now()).slice(-9)}${String(++seq).padStart(4, '0')}9`;
  const response = await ctx.app.inject({
    method: 'POST',
    url: `${BASE}/platform/external-accounts`,
    headers: { authorization: production.auth },
    payload: { currency: 'USD', accountInfo: { accountType: 'USD_ACCOUNT', accountNumber, routingNumber: '021000021', beneficiary } },
  });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as { beneficiaryVerificationStatus: string }).beneficiaryVerificationStatus;
}
const person = (fullName: string) => ({ beneficiaryType: 'INDIVIDUAL', fullName });
const business = (legalName: string) => ({ beneficiaryType: 'BUSINESS', legalName });

describe('name check: generational suffixes and legal forms', () => {
  it.each([
    [person('John Smith Jr'), 'JOHN SMITH SR', 'PARTIAL_MATCH'],
    [person('John Smith'), 'SMITH JOHN III', 'PARTIAL_MATCH'],
    [person('John Smith Jr.'), 'SMITH JOHN JUNIOR', 'MATCHED'],
    [business('Acme Ltd'), 'ACME INC', 'PARTIAL_MATCH'],
    [business('Acme Ltd'), 'ACME LIMITED', 'MATCHED'],
    [business('Acme'), 'ACME GMBH', 'MATCHED'],
    [person('Mark Lee'), 'MARK LEE CORP', 'PARTIAL_MATCH'],
    [person('Mark Lee Corp'), 'MARK LEE CORP', 'PARTIAL_MATCH'],
    [person('Ab Rahman'), 'RAHMAN AB', 'MATCHED'],
  ])('%j against %s: %s', async (beneficiary, record, status) => {
    expect(await check(beneficiary, record)).toBe(status);
  });
});
