import { describe, expect, it } from 'vitest';
import { VARIANTS } from '../../src/modules/external-accounts/variants.js';
import { RAILS, routeServes } from '../../src/modules/rates/rails.js';

/**
 * The rails catalogue (modules/rates/rails.ts) against the account types (external-accounts'
 * variants): a quote pays an account only on its rails that carry its currency, so a rail an
 * account type may be paid on that did not carry the type's currency left accounts a platform
 * could create and never pay (DKK on SEPA, BWP/COP/HTG/… on MOBILE_MONEY did, once).
 */
describe('every rail an account type may be paid on', () => {
  const banks = VARIANTS.filter((v) => v.kind === 'bank');
  it.each(banks.filter((v) => v.currencies.length > 0).map((v) => [v.accountType, v] as const))('%s: pays its currency', (_type, variant) => {
    const rails = variant.railNeeds ? Object.keys(variant.railNeeds) : [...variant.rails];
    const unpaid = variant.currencies.flatMap((currency) => rails.filter((rail) => !routeServes(RAILS[rail as keyof typeof RAILS], currency)).map((rail) => `${currency} on ${rail}`));
    expect(unpaid).toEqual([]);
  });

  it('SWIFT_ACCOUNT names no currency list: its rail carries any fiat currency', () => {
    const swift = banks.find((v) => v.accountType === 'SWIFT_ACCOUNT')!;
    expect(swift.currencies).toEqual([]);
    expect(swift.rails).toEqual(['SWIFT']);
    expect(RAILS.SWIFT.currencies).toBe('ANY_FIAT');
  });
});
