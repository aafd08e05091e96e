/**
 * The shape of an UMA address (UMAD-01): `$`, a user part of 1–64 characters `a-z 0-9 . _ -`,
 * `@`, and a domain name. Whether anyone answers at it is for the UMA protocol to find out.
 */
const UMA_ADDRESS = /^\$[A-Za-z0-9._-]{1,64}@(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

export function isUmaAddress(value: string): boolean {
  return UMA_ADDRESS.test(value);
}
