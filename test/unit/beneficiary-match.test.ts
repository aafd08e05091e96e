import { describe, expect, it } from 'vitest';
import { BeneficiaryVerifier, SimulatedInstitution, type BeneficiaryQuery } from '../../src/modules/external-accounts/beneficiary.js';
import { matchNames, normaliseName, PARTIAL_MATCH_THRESHOLD } from '../../src/modules/external-accounts/name-match.js';

describe('holder name matching', () => {
  it('normalises: transliteration, case, punctuation, titles, generational suffixes, and legal forms of a business only', () => {
    expect(normaliseName('Dr. José  Álvarez-Núñez Jr.')).toBe('jose alvarez nunez');
    expect(normaliseName('Acme Trading GmbH', 'BUSINESS')).toBe('acme trading');
    expect(normaliseName('Acme Trading GmbH', 'INDIVIDUAL')).toBe('acme trading gmbh');
    expect(normaliseName('Σωκράτης')).toBe('sokratis');
  });

  it.each([
    ['John Doe', 'DOE JOHN', 'INDIVIDUAL', 'MATCHED'],
    ['Mr John Doe', 'John Doe', 'INDIVIDUAL', 'MATCHED'],
    ['Jürgen Müller', 'MULLER JURGEN', 'INDIVIDUAL', 'MATCHED'],
    ['John Smith Jr', 'SMITH JOHN JUNIOR', 'INDIVIDUAL', 'MATCHED'],
    ['John Smith Jr', 'JOHN SMITH SR', 'INDIVIDUAL', 'PARTIAL_MATCH'],
    ['John Smith', 'JOHN SMITH II', 'INDIVIDUAL', 'PARTIAL_MATCH'],
    ['Mark Lee', 'MARK LEE CORP', 'INDIVIDUAL', 'PARTIAL_MATCH'],
    ['Mark Lee Ltd', 'MARK LEE LTD', 'INDIVIDUAL', 'PARTIAL_MATCH'],
    ['Ab Rahman', 'RAHMAN AB', 'INDIVIDUAL', 'MATCHED'],
    ['Acme Ltd', 'ACME LIMITED', 'BUSINESS', 'MATCHED'],
    ['Acme', 'ACME LLC', 'BUSINESS', 'MATCHED'],
    ['Acme Ltd', 'ACME INC', 'BUSINESS', 'PARTIAL_MATCH'],
    ['Jon Doe', 'JOHN DOE', 'INDIVIDUAL', 'PARTIAL_MATCH'],
    // A typo in a first letter sorts the words apart (token sort ratio 53): compared in the closest order, 93.
    ['Catherine Jones', 'KATHERINE JONES', 'INDIVIDUAL', 'PARTIAL_MATCH'],
    ['Catherine Jones', 'JONES KATHERINE', 'INDIVIDUAL', 'PARTIAL_MATCH'],
    ['Katherine Jones', 'JONES KATHERINE', 'INDIVIDUAL', 'MATCHED'],
    ['Jon Smith', 'SMYTH JOHN', 'INDIVIDUAL', 'NOT_MATCHED'],
    ['John Doe', 'John Michael Doe', 'INDIVIDUAL', 'PARTIAL_MATCH'],
    ['Doe', 'John Doe', 'INDIVIDUAL', 'NOT_MATCHED'],
    ['Jane Roe', 'John Doe', 'INDIVIDUAL', 'NOT_MATCHED'],
    ['', 'John Doe', 'INDIVIDUAL', 'NOT_MATCHED'],
    ['Jr', 'JR', 'INDIVIDUAL', 'NOT_MATCHED'],
  ] as const)('%s against %s (%s): %s', (given, onRecord, holder, expected) => {
    expect(matchNames(given, onRecord, holder)).toBe(expected);
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
