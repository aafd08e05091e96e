import anyAscii from 'any-ascii';
import { token_set_ratio, token_sort_ratio } from 'fuzzball';

/**
 * How close the name a platform gave is to the holder name the receiving institution has on
 * record (Confirmation-of-Payee style). Both names are normalised the same way:
 * transliterated to ASCII (`any-ascii`: "Müller" → "Muller", "Σωκράτης" → "Sokratis"), lower
 * case, punctuation to spaces, and words that do not identify anyone dropped (titles such as
 * Mr/Dr, legal forms such as Ltd/GmbH/LLC). Then, with fuzzball's ratios (TheFuzz):
 *
 * - MATCHED: the same words in any order (token sort ratio 100: "DOE JOHN" = "John Doe").
 * - PARTIAL_MATCH: token sort ratio ≥ 85 (a typo: "Jon Doe"), or the words of one name, at
 *   least two, all inside the other's (token set ratio 100: a missing middle name, "John Doe" ~
 *   "John Michael Doe").
 * - NOT_MATCHED: anything else.
 */
export const PARTIAL_MATCH_THRESHOLD = 85;

export type NameMatch = 'MATCHED' | 'PARTIAL_MATCH' | 'NOT_MATCHED';

const NOISE = new Set([
  'mr', 'mrs', 'ms', 'miss', 'mx', 'dr', 'prof', 'sir', 'madam', 'jr', 'sr',
  'ltd', 'limited', 'llc', 'inc', 'incorporated', 'corp', 'corporation', 'co', 'plc', 'gmbh', 'ag', 'sa', 'sas', 'sarl', 'bv', 'nv',
  'srl', 'spa', 'pty', 'pte', 'lp', 'llp', 'oy', 'ab', 'as', 'kk', 'the',
]);

export function normaliseName(name: string): string {
  return anyAscii(name.normalize('NFKC'))
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .split(' ')
    .filter((word) => word && !NOISE.has(word))
    .join(' ');
}

export function matchNames(given: string, onRecord: string): NameMatch {
  const a = normaliseName(given);
  const b = normaliseName(onRecord);
  if (!a || !b) return 'NOT_MATCHED';
  const options = { full_process: false };
  const sorted = token_sort_ratio(a, b, options);
  if (sorted === 100) return 'MATCHED';
  if (sorted >= PARTIAL_MATCH_THRESHOLD) return 'PARTIAL_MATCH';
  // One name inside the other counts only when the shorter has two words: "Doe" alone names no one.
  const shorter = Math.min(a.split(' ').length, b.split(' ').length);
  if (shorter >= 2 && token_set_ratio(a, b, options) === 100) return 'PARTIAL_MATCH';
  return 'NOT_MATCHED';
}
