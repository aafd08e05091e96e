import { describe, expect, it } from 'vitest';
import { neutraliseDeep, neutraliseFormula } from '../../src/modules/customers/csv.js';

describe('CSV formula neutralisation (OWASP)', () => {
  it('prefixes every value a spreadsheet would read as a formula, and nothing else', () => {
    for (const v of ['=1+1', '+1', '-1', '@A1', '\tx', '\rx']) expect(neutraliseFormula(v)).toBe(`'${v}`);
    for (const v of ['Ada', '1-2', ' =x', "'=x", '']) expect(neutraliseFormula(v)).toBe(v);
    expect(neutraliseDeep({ a: ['=x', { b: '@y', n: 1 }] })).toEqual({ a: ["'=x", { b: "'@y", n: 1 }] });
  });
});
