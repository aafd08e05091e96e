// The library without its ~80 locale files (its Node entry registers every language): only the codes are used.
import countries from 'i18n-iso-countries/index.js';

/**
 * ISO 3166-1 alpha-2 codes, upper case, from i18n-iso-countries (kept in step with the
 * standard's changes): the officially assigned codes and XK (Kosovo), which the IBAN registry
 * and banks use.
 */
export const COUNTRY_CODES: ReadonlySet<string> = new Set(Object.keys(countries.getAlpha2Codes()));
