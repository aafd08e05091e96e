import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { guardedLookup, RefusedAddressError, refusedRange } from '../../src/platform/address-guard.js';

describe('refusedRange', () => {
  it('names the range of every address a production webhook may not reach', () => {
    const refused: Array<[string, string]> = [
      ['127.0.0.1', 'loopback'],
      ['127.255.0.9', 'loopback'],
      ['::1', 'loopback'],
      ['0.0.0.0', 'unspecified'],
      ['::', 'unspecified'],
      ['10.20.30.40', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.0.1', 'private'],
      ['100.64.0.1', 'private (carrier-grade NAT)'],
      ['169.254.169.254', 'link-local (includes the cloud metadata service)'],
      ['fe80::1', 'link-local'],
      ['fc00::1', 'private (unique local, includes cloud metadata)'],
      ['fd00:ec2::254', 'private (unique local, includes cloud metadata)'],
      ['::ffff:10.0.0.1', 'private'],
      ['::ffff:7f00:1', 'loopback'],
      ['64:ff9b::a9fe:a9fe', 'link-local (includes the cloud metadata service)'],
      ['224.0.0.1', 'multicast'],
      ['ff02::1', 'multicast'],
      ['192.0.2.1', 'documentation'],
      ['2001:db8::1', 'documentation'],
      ['240.0.0.1', 'reserved'],
    ];
    for (const [address, range] of refused) expect(refusedRange(address), address).toBe(range);
    for (const address of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808']) {
      expect(refusedRange(address), address).toBeUndefined();
    }
  });
});

describe('guardedLookup', () => {
  function lookup(answers: LookupAddress[][], options: { all?: boolean; family?: number }) {
    let calls = 0;
    const guarded = guardedLookup(async () => answers[calls++]!);
    return new Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family?: number; calls: number }>((resolve) =>
      guarded('hooks.example.com', options, (error, address, family) => resolve({ error, address, ...(family === undefined ? {} : { family }), calls })),
    );
  }

  it('resolves once and hands the socket exactly the addresses it checked (no second look-up to rebind)', async () => {
    const checked = [{ address: '93.184.216.34', family: 4 }];
    const rebound = [{ address: '127.0.0.1', family: 4 }];
    expect(await lookup([checked, rebound], { all: true })).toEqual({ error: null, address: checked, calls: 1 });
    expect(await lookup([checked, rebound], {})).toEqual({ error: null, address: '93.184.216.34', family: 4, calls: 1 });
  });

  it('refuses a host when any of its addresses is refused', async () => {
    const result = await lookup([[{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.1', family: 4 }]], { all: true });
    expect(result.error).toBeInstanceOf(RefusedAddressError);
    expect(result.error!.message).toBe('refused: the endpoint resolves to 10.0.0.1, a private address');
  });

  it('honours the family the socket asks for', async () => {
    const both = [
      { address: '2606:4700:4700::1111', family: 6 },
      { address: '1.1.1.1', family: 4 },
    ];
    expect(await lookup([both], { family: 4 })).toMatchObject({ error: null, address: '1.1.1.1', family: 4 });
    expect((await lookup([[{ address: '1.1.1.1', family: 4 }]], { family: 6 })).error?.code).toBe('ENOTFOUND');
  });
});
