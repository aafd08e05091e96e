import { AppError } from './errors.js';

/**
 * The one rule for an UMA address (UMAD-01), used wherever one comes in: a customer's own,
 * invitations, receiver lookups, payments to and from other VASPs. `$`, a user part of 1–64
 * characters `A-Z a-z 0-9 . _ + -` (what the UMA SDK's `isValidUmaAddress` accepts, so every
 * address another VASP's SDK can pay is one Corridor takes), `@`, a DNS host name (labels of 1–63
 * letters, digits and inner hyphens, 253 characters in all: narrower than the SDK's
 * `[a-z0-9.-]+`, which also lets `a..b` or `-a` through, names no VASP can answer at), and a port
 * where the VASP answers on one (`$alice@localhost:8080`, as a platform's `umaDomain` may be).
 * The domain must also be a host a URL can name (`nameableByUrl`).
 * test/unit/uma-address.test.ts holds every address this accepts to the SDK's rule.
 */
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
/** 1–65535, without leading zeros. */
const PORT = '(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';

/** The rule's shape as a JSON Schema `pattern` (ECMAScript), for request schemas; the functions below also hold the domain to `nameableByUrl`. */
export const UMA_ADDRESS_PATTERN = `^\\$[A-Za-z0-9._+-]{1,64}@(?=[^:]{1,253}(?::|$))${LABEL}(?:\\.${LABEL})*(?::${PORT})?$`;

const UMA_ADDRESS = new RegExp(UMA_ADDRESS_PATTERN);

export interface UmaAddress {
  /** `$user@domain`, the domain lower-cased: the form compared and signed. */
  address: string;
  /** The user part with its `$`. */
  user: string;
  /** Host and optional port, lower-cased: where the VASP answers. */
  domain: string;
}

/**
 * The pattern's labels are DNS-shaped, but the URL parser reads a host whose last label is a
 * number (`999.0`, `a.1`, `a.0x`) as an IPv4 address and refuses it when it is none, and refuses
 * invalid punycode (`xn--a.com`): every request to such a VASP would throw while its URL is built,
 * a 500 instead of the refusal of the address.
 */
function nameableByUrl(address: string): boolean {
  return URL.canParse(`https://${address.slice(address.indexOf('@') + 1)}`);
}

export function parseUmaAddress(raw: string): UmaAddress | undefined {
  if (!isUmaAddress(raw)) return undefined;
  const at = raw.indexOf('@');
  const user = raw.slice(0, at);
  const domain = raw.slice(at + 1).toLowerCase();
  return { address: `${user}@${domain}`, user, domain };
}

export function isUmaAddress(value: string): boolean {
  return UMA_ADDRESS.test(value) && nameableByUrl(value);
}

/** What a malformed address is refused with, wherever it came in: the field, and (at most 330 characters of) what it held. */
function invalidUmaAddress(field: string, value: string): AppError {
  return new AppError('INVALID_UMA_ADDRESS', `${field} must be a UMA address: $user@domain, with a port where the VASP answers on one.`, {
    details: { field, value: value.slice(0, 330) },
  });
}

/** The parsed address of `field`; 400 INVALID_UMA_ADDRESS when it is not one. */
export function requireUmaAddress(field: string, raw: string): UmaAddress {
  const parsed = parseUmaAddress(raw);
  if (!parsed) throw invalidUmaAddress(field, raw);
  return parsed;
}
