/**
 * The upstream sandbox's test values on external accounts: the last three digits of an
 * account's primary identifier choose how payments to and from it end (transactions'
 * SandboxRails) and how its holder name is verified (beneficiary.ts). Sandbox platforms only.
 */

/**
 * Fields that name where the money goes, most specific first: the primary identifier is the
 * first of them an accountInfo holds (an Indian account with a UPI handle and an account number
 * is named by the account number; a wallet by its address).
 */
const PRIMARY_IDENTIFIER_FIELDS = ['accountNumber', 'iban', 'clabeNumber', 'pixKey', 'vpa', 'address', 'lightningAddress', 'invoice', 'bolt12', 'phoneNumber'] as const;

/** The account number, IBAN, CLABE, PIX key, wallet address… of an accountInfo; undefined when it has none. */
export function primaryIdentifier(info: Record<string, unknown>): string | undefined {
  const field = PRIMARY_IDENTIFIER_FIELDS.find((name) => typeof info[name] === 'string');
  return field ? (info[field] as string) : undefined;
}

/**
 * The three digits an identifier ends in, read before any `@` (an e-mail PIX key
 * `name.002@bank.example` ends in 002); undefined when it does not end in three digits.
 */
export function accountSuffix(identifier: string): string | undefined {
  return /(\d{3})$/.exec(identifier.split('@')[0]!)?.[1];
}
