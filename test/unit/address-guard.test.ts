import { pbkdf2 } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dnsResolver, guardedLookup, RefusedAddressError, refusedRange } from '../../src/platform/address-guard.js';

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

describe('dnsResolver', () => {
  // A name server on loopback: an A record for ok.test, no AAAA record, and no answer at all
  // for silent.test (as a broken or hostile domain's name servers behave).
  let server: Socket;
  let port: number;
  beforeAll(async () => {
    server = createSocket('udp4');
    server.on('message', (query, peer) => {
      const end = query.indexOf(0, 12) + 1; // the question's name ends with a zero-length label
      const name = labels(query.subarray(12, end));
      const type = query.readUInt16BE(end);
      if (name === 'silent.test') return;
      const question = query.subarray(12, end + 4);
      const header = Buffer.alloc(12);
      query.copy(header, 0, 0, 2); // the query's id
      const found = name === 'ok.test';
      header.writeUInt16BE(found ? 0x8180 : 0x8183, 2); // a response, recursion; NXDOMAIN for other names
      header.writeUInt16BE(1, 4);
      const answers = found && type === 1 ? [Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 93, 184, 216, 34])] : [];
      header.writeUInt16BE(answers.length, 6);
      server.send(Buffer.concat([header, question, ...answers]), peer.port, peer.address);
    });
    await new Promise<void>((resolve) => server.bind(0, '127.0.0.1', resolve));
    port = server.address().port;
  });
  afterAll(() => server.close());

  function labels(name: Buffer): string {
    const parts: string[] = [];
    for (let i = 0; name[i]! > 0; i += name[i]! + 1) parts.push(name.subarray(i + 1, i + 1 + name[i]!).toString('latin1'));
    return parts.join('.');
  }

  it('answers the addresses of a name, and the reason a name has none', async () => {
    const resolve = dnsResolver({ servers: [`127.0.0.1:${port}`], timeoutMs: 500, tries: 1 });
    expect(await resolve('ok.test')).toEqual([{ address: '93.184.216.34', family: 4 }]);
    await expect(resolve('missing.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('gives up on name servers that never answer without holding a thread of libuv\'s pool', async () => {
    const resolve = dnsResolver({ servers: [`127.0.0.1:${port}`], timeoutMs: 300, tries: 1 });
    // More look-ups in flight than the pool has threads (4): getaddrinfo would hold them all.
    const settled: string[] = [];
    const lookups = Array.from({ length: 8 }, () =>
      resolve('silent.test').then(
        () => settled.push('answered'),
        (error: NodeJS.ErrnoException) => settled.push(`lookup ${error.code}`),
      ),
    );
    await new Promise<void>((resolve, reject) => pbkdf2('secret', 'salt', 1, 32, 'sha256', (error) => (error ? reject(error) : resolve())));
    settled.push('pool work done');
    await Promise.all(lookups);
    expect(settled).toEqual(['pool work done', ...Array<string>(8).fill('lookup ETIMEOUT')]);
  });
});
