import { describe, expect, it } from 'vitest';
import { BeneficiaryVerifier, SimulatedInstitution, type BeneficiaryQuery } from '../../src/modules/external-accounts/beneficiary.js';
import { matchNames, normaliseName, PARTIAL_MATCH_THRESHOLD } from '../../src/modules/external-accounts/name-match.js';

describe('holder name matching', () => {
  it('normalises: transliteration, case, punctuation, titles and legal forms', () => {
    expect(normaliseName('Dr. José  Álvarez-Núñez')).toBe('jose alvarez nunez');
    expect(normaliseName('Acme Trading GmbH')).toBe('acme trading');
    expect(normaliseName('Σωκράτης')).toBe('sokratis');
  });

  it.each([
    ['John Doe', 'DOE JOHN', 'MATCHED'],
    ['Mr John Doe', 'John Doe', 'MATCHED'],
    ['Jürgen Müller', 'MULLER JURGEN', 'MATCHED'],
    ['Acme Ltd', 'ACME LIMITED', 'MATCHED'],
    ['Jon Doe', 'JOHN DOE', 'PARTIAL_MATCH'],
    ['John Doe', 'John Michael Doe', 'PARTIAL_MATCH'],
    ['Doe', 'John Doe', 'NOT_MATCHED'],
    ['Jane Roe', 'John Doe', 'NOT_MATCHED'],
    ['', 'John Doe', 'NOT_MATCHED'],
  ])('%s against %s: %s', (given, onRecord, expected) => {
    expect(matchNames(given, onRecord)).toBe(expected);
  });

  it('documents its threshold', () => {
    expect(PARTIAL_MATCH_THRESHOLD).toBe(85);
  });
});

describe('beneficiary verifier', () => {
  const query = (name: string): BeneficiaryQuery => ({ accountType: 'GBP_ACCOUNT', currency: 'GBP', account: { sortCode: '200000' }, beneficiaryType: 'INDIVIDUAL', name });

  it('keeps names at the simulated institution as banks do, with trigger words', async () => {
    const bank = new SimulatedInstitution();
    expect(await bank.holderName(query('Ana María López'))).toBe('LOPEZ ANA MARIA');
    expect(await bank.holderName(query('Ana Nomatch'))).toBe('JORDAN RIVERA');
    expect(await bank.holderName(query('Ana Unsupported'))).toBeNull();
  });

  it('answers UNSUPPORTED for production platforms when no provider is configured, and never reveals a mismatched name', async () => {
    const verifier = new BeneficiaryVerifier({ timeoutMs: 1000 });
    expect(await verifier.verify('production', query('John Doe'))).toEqual({ status: 'UNSUPPORTED' });
    expect(await verifier.verify('sandbox', query('John Nomatch'))).toEqual({ status: 'NOT_MATCHED' });
    expect(await verifier.verify('sandbox', query('John Doe'))).toEqual({ status: 'MATCHED', verifiedName: 'DOE JOHN' });
  });
});
