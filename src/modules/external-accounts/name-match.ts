import anyAscii from 'any-ascii';
import { ratio, token_set_ratio, token_sort_ratio } from 'fuzzball';

/**
 * How close the name a platform gave is to the holder name the receiving institution has on
 * record (Confirmation-of-Payee style). Both names are normalised the same way:
 * transliterated to ASCII (`any-ascii`: "Müller" → "Muller", "Σωκράτης" → "Sokratis"), lower
 * case, punctuation to spaces, titles (Mr, Dr, …) and "the" dropped. Generational suffixes
 * (Jr, Sr, II, III, IV) are set apart from the name's words, and so, for a BUSINESS, are legal
 * forms (Ltd, GmbH, LLC, …; "Limited" = "Ltd", "Incorporated" = "Inc", "Corporation" = "Corp").
 * For an INDIVIDUAL a legal form is an ordinary word. Then, on the words, with fuzzball's ratios
 * (TheFuzz):
 *
 * - MATCHED: the same words in any order (token sort ratio 100: "DOE JOHN" = "John Doe"), the
 *   same generational suffixes on both sides, for a BUSINESS no two different legal forms (one
 *   side without any is fine: "Acme" = "ACME LTD"), and for an INDIVIDUAL no legal form that
 *   marks a company on the record side ("MARK LEE CORP", "… LTD", "… LLC", "… GMBH": a company's
 *   name; short forms that are also name particles, "Ab Rahman", do not count).
 * - PARTIAL_MATCH: the same words otherwise ("John Smith Jr" ~ "JOHN SMITH SR": maybe the
 *   father; "Acme Ltd" ~ "ACME INC": maybe another company), a typo ("Jon Doe"; "Catherine Jones"
 *   ~ "JONES KATHERINE"): the record's words, in the order closest to the given name's, at a ratio
 *   ≥ 85 (`closeness`), or the words of one name, at least two, all inside the other's (token set
 *   ratio 100: a missing middle name, "John Doe" ~ "John Michael Doe").
 * - NOT_MATCHED: anything else.
 */
export const PARTIAL_MATCH_THRESHOLD = 85;

export type NameMatch = 'MATCHED' | 'PARTIAL_MATCH' | 'NOT_MATCHED';
export type HolderType = 'INDIVIDUAL' | 'BUSINESS';

const DROPPED = new Set(['mr', 'mrs', 'ms', 'miss', 'mx', 'dr', 'prof', 'sir', 'madam', 'the']);

/** Generational suffixes by spelling. */
const GENERATIONS: Record<string, string> = { jr: 'jr', junior: 'jr', sr: 'sr', senior: 'sr', ii: 'ii', iii: 'iii', iv: 'iv' };

/** Legal forms by spelling: spellings of one form share its key. */
const LEGAL_FORMS: Record<string, string> = {
  ltd: 'ltd', limited: 'ltd', llc: 'llc', inc: 'inc', incorporated: 'inc', corp: 'corp', corporation: 'corp', co: 'co', plc: 'plc', gmbh: 'gmbh',
  ag: 'ag', sa: 'sa', sas: 'sas', sarl: 'sarl', bv: 'bv', nv: 'nv', srl: 'srl', spa: 'spa', pty: 'pty', pte: 'pte', lp: 'lp', llp: 'llp', oy: 'oy',
  ab: 'ab', as: 'as', kk: 'kk',
};

/**
 * The legal forms that mark a company's name even among a person's words. Short forms that are
 * also name particles or initials ("Ab Rahman", "Sa", "Co") do not.
 */
const COMPANY_MARKERS = new Set(['ltd', 'llc', 'inc', 'corp', 'plc', 'gmbh', 'sarl', 'llp', 'pty', 'pte']);

interface ParsedName {
  /** The words that name the holder, space-separated. */
  words: string;
  generations: Set<string>;
  /** A BUSINESS's legal forms (empty for an INDIVIDUAL, whose words keep them). */
  legalForms: Set<string>;
  /** Whether a word marks a company's name (COMPANY_MARKERS), whatever the holder type. */
  companyMarked: boolean;
}

const has = (table: Record<string, string>, word: string) => Object.hasOwn(table, word);

function parseName(name: string, holder: HolderType): ParsedName {
  const words: string[] = [];
  const generations = new Set<string>();
  const legalForms = new Set<string>();
  let companyMarked = false;
  for (const word of anyAscii(name.normalize('NFKC')).toLowerCase().replace(/[^a-z0-9]+/g, ' ').split(' ')) {
    if (!word || DROPPED.has(word)) continue;
    if (has(GENERATIONS, word)) {
      generations.add(GENERATIONS[word]!);
      continue;
    }
    if (has(LEGAL_FORMS, word)) {
      if (COMPANY_MARKERS.has(LEGAL_FORMS[word]!)) companyMarked = true;
      if (holder === 'BUSINESS') {
        legalForms.add(LEGAL_FORMS[word]!);
        continue;
      }
    }
    words.push(word);
  }
  return { words: words.join(' '), generations, legalForms, companyMarked };
}

/** The words of a holder name that the match compares (see above). */
export function normaliseName(name: string, holder: HolderType = 'INDIVIDUAL'): string {
  return parseName(name, holder).words;
}

const sameSet = (a: Set<string>, b: Set<string>) => a.size === b.size && [...a].every((x) => b.has(x));

/** Names of more words are compared in sorted order only: 4! orders is the most tried. */
const MAX_ORDERED_WORDS = 4;

function orders(words: string[]): string[][] {
  if (words.length <= 1) return [words];
  return words.flatMap((word, i) => orders([...words.slice(0, i), ...words.slice(i + 1)]).map((rest) => [word, ...rest]));
}

/**
 * How close two names' words are, in whatever order: the ratio of the given name to the record's
 * words in their closest order, at least their token sort ratio (`sorted`). That ratio alone
 * sorts each side's words first, so a typo in a first letter ("Catherine" / "KATHERINE") sorts
 * the words apart and scores 53.
 */
function closeness(given: string, onRecord: string, sorted: number, options: { full_process: boolean }): number {
  const words = onRecord.split(' ');
  if (words.length > MAX_ORDERED_WORDS || given.split(' ').length > MAX_ORDERED_WORDS) return sorted;
  return Math.max(sorted, ...orders(words).map((order) => ratio(given, order.join(' '), options)));
}

export function matchNames(given: string, onRecord: string, holder: HolderType): NameMatch {
  const a = parseName(given, holder);
  const b = parseName(onRecord, holder);
  if (!a.words || !b.words) return 'NOT_MATCHED';
  const options = { full_process: false };
  const sorted = token_sort_ratio(a.words, b.words, options);
  if (sorted === 100) {
    const differingForms = a.legalForms.size > 0 && b.legalForms.size > 0 && !sameSet(a.legalForms, b.legalForms);
    const companyOnRecord = holder === 'INDIVIDUAL' && b.companyMarked;
    return sameSet(a.generations, b.generations) && !differingForms && !companyOnRecord ? 'MATCHED' : 'PARTIAL_MATCH';
  }
  if (closeness(a.words, b.words, sorted, options) >= PARTIAL_MATCH_THRESHOLD) return 'PARTIAL_MATCH';
  // One name inside the other counts only when the shorter has two words: "Doe" alone names no one.
  const shorter = Math.min(a.words.split(' ').length, b.words.split(' ').length);
  if (shorter >= 2 && token_set_ratio(a.words, b.words, options) === 100) return 'PARTIAL_MATCH';
  return 'NOT_MATCHED';
}
