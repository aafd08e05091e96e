/**
 * The shape of an UMA address (UMAD-01): `$`, a user part of 1–64 characters `a-z 0-9 . _ -`,
 * `@`, and a domain name, with a port where the VASP answers on one (`$alice@localhost:8080`, as
 * a platform's `umaDomain` may be). Whether anyone answers at it is for the UMA protocol to find out.
 */
const UMA_ADDRESS = /^\$[A-Za-z0-9._-]{1,64}@(?=[^:]{1,253}(?::|$))[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(?::[0-9]{1,5})?$/;

export function isUmaAddress(value: string): boolean {
  return UMA_ADDRESS.test(value);
}
