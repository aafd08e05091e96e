/**
 * Corridor's counterparty field names (upstream's CustomerInfoFieldName) and UMA's payer-data
 * keys (UMAD-04 names identifier, name, email, compliance; the SDK adds birthDate, nationality,
 * countryOfResidence, phoneNumber). A field UMA does not name travels under its camelCase name.
 */
const NAMED: Record<string, string> = {
  IDENTIFIER: 'identifier',
  FULL_NAME: 'name',
  EMAIL: 'email',
  BIRTH_DATE: 'birthDate',
  NATIONALITY: 'nationality',
  COUNTRY_OF_RESIDENCE: 'countryOfResidence',
  PHONE_NUMBER: 'phoneNumber',
};
const BY_KEY = new Map(Object.entries(NAMED).map(([field, key]) => [key, field]));

export function fieldToPayerDataKey(field: string): string {
  return NAMED[field] ?? field.toLowerCase().replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

/** The field a payer-data key asks for, or undefined for a key Corridor has no field for (and `compliance`, which the VASP itself supplies). */
export function payerDataKeyToField(key: string, known: readonly string[]): string | undefined {
  const named = BY_KEY.get(key);
  if (named) return named;
  const field = key.replace(/([A-Z])/g, '_$1').toUpperCase();
  return known.includes(field) ? field : undefined;
}
