import { isValidUmaAddress } from '@uma-sdk/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/platform/errors.js';
import { isUmaAddress, parseUmaAddress, requireUmaAddress, UMA_ADDRESS_PATTERN } from '../../src/platform/uma-address.js';

describe('the UMA address rule', () => {
  it('takes what another VASP can pay, with a port where the VASP answers on one', () => {
    for (const address of [
      '$alice@pay.example.com',
      '$Alice.Smith_1@Pay.Example.COM',
      '$a+b@pay.example.com',
      '$x-y@localhost:8080',
      '$dev@127.0.0.1:18080',
      '$sandbox@sandbox.uma.money',
      `$${'a'.repeat(64)}@example.com`,
      '$bob@a.b:1',
      '$bob@a.b:65535',
    ]) {
      expect(isUmaAddress(address), address).toBe(true);
    }
  });

  it('refuses every other shape', () => {
    for (const address of [
      'alice@pay.example.com',
      '$@pay.example.com',
      `$${'a'.repeat(65)}@example.com`,
      '$alice',
      '$alice@',
      '$al ice@example.com',
      '$al@ice@example.com',
      '$alice@pay..example.com',
      '$alice@-pay.example.com',
      '$alice@pay-.example.com',
      '$alice@.example.com',
      '$alice@example.com.',
      '$alice@exa_mple.com',
      `$alice@${'a'.repeat(64)}.com`,
      `$alice@${Array.from({ length: 64 }, () => 'abc').join('.')}`,
      '$alice@example.com:0',
      '$alice@example.com:08080',
      '$alice@example.com:65536',
      '$alice@example.com:',
      '$alice@[::1]:8080',
      '$alice@example.com/path',
    ]) {
      expect(isUmaAddress(address), address).toBe(false);
    }
  });

  it('lower-cases the domain and keeps the user part as written', () => {
    expect(parseUmaAddress('$Alice@Pay.Example.COM:8443')).toEqual({ address: '$Alice@pay.example.com:8443', user: '$Alice', domain: 'pay.example.com:8443' });
  });

  it('takes nothing the UMA SDK refuses', () => {
    const char = (chars: string) => fc.constantFrom(...chars.split(''));
    const text = (chars: string, maxLength: number) => fc.array(char(chars), { minLength: 0, maxLength }).map((c) => c.join(''));
    // Mostly the characters either rule allows, so that many candidates are addresses.
    const address = fc
      .tuple(text('aZ09._+-', 70), text('aZ09.-', 30), fc.option(fc.integer({ min: 0, max: 70_000 })))
      .map(([user, domain, port]) => `$${user}@${domain}${port === null ? '' : `:${port}`}`);
    fc.assert(
      fc.property(fc.oneof(address, fc.string({ maxLength: 80 }).map((rest) => `$${rest}`)), (candidate) => {
        if (!isUmaAddress(candidate)) return;
        // The SDK's rule has no port; Corridor's adds one beside it.
        expect(isValidUmaAddress(candidate.replace(/:\d+$/, ''))).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });

  it('is the pattern request schemas carry', () => {
    expect(new RegExp(UMA_ADDRESS_PATTERN).test('$a+b@localhost:8080')).toBe(true);
  });

  it('refuses a malformed address with the field it came in and a bounded copy of it', () => {
    const long = `$${'a'.repeat(400)}@example.com`;
    for (const [field, raw] of [['inviterUma', 'alice@example.com'], ['receiverUmaAddress', long]] as const) {
      let thrown: unknown;
      try {
        requireUmaAddress(field, raw);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(AppError);
      expect(thrown).toMatchObject({ code: 'INVALID_UMA_ADDRESS', details: { field, value: raw.slice(0, 330) } });
    }
    expect(requireUmaAddress('f', '$Ann@Pay.Example.com')).toEqual({ address: '$Ann@pay.example.com', user: '$Ann', domain: 'pay.example.com' });
  });
});
