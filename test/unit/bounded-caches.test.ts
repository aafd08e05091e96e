import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KEPT_SUBKEYS, TenantSecretBox } from '../../src/platform/crypto/secret-box.js';

/**
 * What a process keeps between requests stays within its bound however many distinct inputs it
 * meets. The structures are private: the tests read their sizes through a cast.
 */
describe('TenantSecretBox subkeys', () => {
  it(`keeps at most ${KEPT_SUBKEYS} tenants' subkeys; a dropped one is derived again and opens what it sealed`, () => {
    const box = new TenantSecretBox(randomBytes(32), 'tax-identifier');
    const first = box.seal('tenant-0', 1, '123-45-6789', 'row-0');
    for (let i = 1; i <= KEPT_SUBKEYS + 500; i++) box.seal(`tenant-${i}`, 1 + (i % 3), 'x', `row-${i}`);
    expect((box as unknown as { boxes: Map<string, unknown> }).boxes.size).toBeLessThanOrEqual(KEPT_SUBKEYS);
    expect(box.open('tenant-0', 1, first, 'row-0')).toBe('123-45-6789');
  });
});
