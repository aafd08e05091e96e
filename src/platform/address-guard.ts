import type { LookupAddress } from 'node:dns';
import { Resolver as AresResolver } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Addresses a production platform's webhook may not reach: Corridor's own host, the private
 * networks it sits in, the cloud metadata service, and IPv6 ranges that lead to an IPv4 address
 * by a route the guard cannot follow (6to4, Teredo, SIIT). Each range carries the name an
 * integrator reads in the delivery log. IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96)
 * addresses are judged by the IPv4 address they carry (`refusedRange`).
 */
const RANGES: Array<[string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'private (carrier-grade NAT)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local (includes the cloud metadata service)'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'reserved'],
  ['192.0.2.0', 24, 'ipv4', 'documentation'],
  ['192.88.99.0', 24, 'ipv4', 'reserved (6to4 relay anycast)'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking'],
  ['198.51.100.0', 24, 'ipv4', 'documentation'],
  ['203.0.113.0', 24, 'ipv4', 'documentation'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['::', 96, 'ipv6', 'reserved (IPv4-compatible)'],
  ['::ffff:0:0:0', 96, 'ipv6', 'reserved (IPv4-translated)'],
  ['64:ff9b:1::', 48, 'ipv6', 'private (local NAT64)'],
  ['100::', 64, 'ipv6', 'reserved (discard)'],
  ['2001::', 32, 'ipv6', 'tunnel (Teredo, carries an IPv4 address)'],
  ['2001:2::', 48, 'ipv6', 'benchmarking'],
  ['2001:10::', 28, 'ipv6', 'reserved (ORCHID)'],
  ['2001:20::', 28, 'ipv6', 'reserved (ORCHIDv2)'],
  ['2001:db8::', 32, 'ipv6', 'documentation'],
  ['2002::', 16, 'ipv6', 'tunnel (6to4, carries an IPv4 address)'],
  ['3fff::', 20, 'ipv6', 'documentation'],
  ['fc00::', 7, 'ipv6', 'private (unique local, includes cloud metadata)'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fec0::', 10, 'ipv6', 'private (site-local)'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

/** Every IPv6 address outside global unicast (2000::/3) that no range above names is refused as this. */
const NOT_GLOBAL_UNICAST = 'reserved (not global unicast)';

const LISTS = RANGES.map(([network, prefix, family, name]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, family);
  return { list, family, name };
});

/**
 * The eight 16-bit groups of an IPv6 address in any spelling `isIP` accepts: `::` anywhere,
 * leading zeros, upper case, a trailing dotted quad, a zone (`%eth0`, dropped).
 */
function ipv6Groups(address: string): number[] {
  let text = address.split('%')[0]!;
  // A dotted quad always follows a colon; starting the match there keeps it linear, where
  // `(\d+)\.…$` alone restarts at every digit of a run (quadratic).
  const dotted = /:(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const part = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const before = part(head);
  if (tail === undefined) return before;
  const after = part(tail);
  return [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
}

/**
 * The refused range of a URL host (`URL.hostname`, brackets and all) that is itself an IP
 * address: no DNS answer can change it, so callers refuse it before connecting (or when it is
 * set). A host name gives undefined; it is judged when resolved (`guardedLookup`).
 */
export function refusedLiteral(hostname: string): { address: string; range: string } | undefined {
  const address = hostname.replace(/^\[(.*)\]$/, '$1');
  const range = isIP(address) ? refusedRange(address) : undefined;
  return range ? { address, range } : undefined;
}

/** Why `address` may not be reached from production (its range's name), or undefined when it may. */
export function refusedRange(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  if (family === 4) return LISTS.find((r) => r.family === 'ipv4' && r.list.check(address, 'ipv4'))?.name;
  const groups = ipv6Groups(address);
  const zero = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  const ipv4 = () => [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255].join('.');
  // IPv4-mapped (::ffff:a.b.c.d, however written) reaches the IPv4 address; so does NAT64's
  // well-known prefix, through the network's translator.
  if (zero(0, 5) && groups[5] === 0xffff) return refusedRange(ipv4());
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zero(2, 6)) return refusedRange(ipv4());
  // Checked in one canonical spelling (no zone, no dotted quad).
  const canonical = groups.map((g) => g.toString(16)).join(':');
  const named = LISTS.find((r) => r.family === 'ipv6' && r.list.check(canonical, 'ipv6'))?.name;
  if (named) return named;
  return (groups[0]! & 0xe000) === 0x2000 ? undefined : NOT_GLOBAL_UNICAST;
}

export class RefusedAddressError extends Error {
  constructor(
    readonly address: string,
    readonly range: string,
  ) {
    super(`refused: the endpoint resolves to ${address}, a ${range} address`);
    this.name = 'RefusedAddressError';
  }
}

export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export interface DnsResolverOptions {
  /** Name servers (`host` or `host:port`); the system's (/etc/resolv.conf) when absent. */
  servers?: string[];
  /** The first try's deadline per server; c-ares doubles it on each further try. */
  timeoutMs?: number;
  tries?: number;
}

/**
 * Resolves names through c-ares on the event loop, each query under its own deadline. Node's
 * `dns.lookup` runs getaddrinfo on libuv's pool of four threads and cannot be abandoned: a
 * platform whose domain's name servers never answer would hold those threads past every request
 * timeout, and every other platform's deliveries, JWKS fetches, file reads and image screening
 * would queue behind them. c-ares reads no /etc/hosts; the names it serves (production endpoints,
 * under the address guard) are public.
 */
export function dnsResolver(options: DnsResolverOptions = {}): Resolver {
  const resolver = new AresResolver({ timeout: options.timeoutMs ?? 2_000, tries: options.tries ?? 2 });
  if (options.servers) resolver.setServers(options.servers);
  return async (hostname) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    const addresses: LookupAddress[] = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (addresses.length > 0) return addresses;
    // Both failed or were empty: the reason worth telling is not "no records of this type".
    const reasons = [v4, v6].flatMap((r) => (r.status === 'rejected' ? [r.reason as NodeJS.ErrnoException] : []));
    throw reasons.find((r) => r.code !== 'ENODATA') ?? reasons[0] ?? Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' });
  };
}

/** The resolver of guarded (production) requests. */
export const systemResolver: Resolver = dnsResolver();

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for the socket: it resolves the host once, refuses the connection when any
 * address is in a refused range, and hands the socket exactly the addresses it checked, so a
 * DNS answer that changes between check and connect (rebinding) cannot slip through.
 */
export function guardedLookup(resolver: Resolver) {
  return (hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback): void => {
    resolver(hostname).then(
      (addresses) => {
        for (const { address } of addresses) {
          const range = refusedRange(address);
          if (range) return callback(new RefusedAddressError(address, range), '');
        }
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
        if (wanted.length === 0) return callback(Object.assign(new Error(`${hostname} has no usable address`), { code: 'ENOTFOUND' }), '');
        if (options.all) return callback(null, wanted);
        return callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
}
