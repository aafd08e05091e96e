import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { check, type Diagnostics } from 'recheck';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { checkPixKey } from '../../src/modules/external-accounts/formats.js';
import { LIVENESS_PATH } from '../../src/modules/external-accounts/ownership.js';
import { significant } from '../../src/modules/uma/amounts.js';
import { KYC_PAGE_PATH } from '../../src/modules/verifications/kyc-links.js';
import { refusedRange } from '../../src/platform/address-guard.js';
import { CUSTOM_FORMATS, FORMAT_PATTERNS } from '../../src/platform/http/validation.js';
import { IDEMPOTENCY_KEY_HEADER } from '../../src/platform/idempotency.js';
import { UMA_ADDRESS_PATTERN } from '../../src/platform/uma-address.js';

/**
 * No regular expression backtracks super-linearly (ReDoS): every one that can see a caller's
 * text, an uploaded file or a counterparty's answer is checked with recheck, which rates a pattern
 * safe, or vulnerable with an attack string. Checked are
 * - every regex literal in src/, found by parsing each file (a new one is checked without listing it);
 * - every `new RegExp(…)` in src/: each site is listed in CONSTRUCTED with the patterns it builds,
 *   and a site not listed (or whose argument changed) fails, as does a `.match`/`.matchAll`/`.search`
 *   handed anything but a regex (a string there is compiled as one);
 * - every `pattern` of the served OpenAPI document (openapi.json, which `npm run openapi:check`
 *   holds to the code) and every string written as a `pattern:` in src/ (schemas not served, such as
 *   the directory file), compiled with the `u` flag as ajv does;
 * - the regexes of ajv-formats behind each format the document uses (email, uri, hostname, date),
 *   which check every such field; one too slow to check on every run is in CHECKED_ONCE.
 * With allErrors, ajv runs `pattern` and `format` even on a value over its maxLength, so a schema's
 * maxLength does not bound what those regexes see: the body limit does.
 *
 * recheck runs its native build when its platform package is installed (linux x64 here), else the
 * same checker compiled to JavaScript, some 3× slower with the same verdicts. Verdicts are decided
 * by counted steps, not by time (attackTimeout and incubationTimeout off), so a busy machine makes
 * them slower, not different.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);

/**
 * Dependency regexes too slow to check on every run (seconds each), checked once: keyed by the
 * SHA-256 of `/source/flags`, so a changed regex (a new ajv-formats) is checked again here, and its
 * stale entry fails.
 */
const CHECKED_ONCE: Record<string, string> = {
  '9e19ac842685b47b4817adb114c0d4454dd78078ae71d542aecbfeabe0ea0fcd': 'ajv-formats 3.0.1 URI (format uri): safe by fuzzing, recheck 4.5.0, 8 s',
};

/** Formats validation.ts gives ajv itself, replacing any of ajv-formats' of the same name. */
const CORRIDOR_FORMATS = new Set([...Object.keys(CUSTOM_FORMATS), 'date-time']);

/**
 * Patterns rated vulnerable that stay, each with why no caller can make it slow. Keyed by file and
 * pattern source; an entry that no longer matches a vulnerable pattern fails, so it is removed
 * with the pattern.
 */
const ALLOWED: Array<{ file: string; source: string; why: string }> = [
  {
    file: 'src/config.ts',
    source: '\\/+$',
    why: 'trims CORRIDOR_PUBLIC_URL, the operator’s setting, once at start; no caller sends it',
  },
  {
    file: 'src/modules/rates/pricing.ts',
    source: '0+$',
    why: 'runs on the 18 (RATE_SCALE) fraction digits of a rate Corridor computed, never on longer text',
  },
];

/** Each `new RegExp(…)` site of src/, by file and argument text, and the patterns it builds. */
const CONSTRUCTED: Array<{ file: string; argument: string; patterns: string[] }> = [
  { file: 'src/app.ts', argument: '`((?:${KYC_PAGE_PATH}|${LIVENESS_PATH})/)[^/?#]+`', patterns: [`((?:${KYC_PAGE_PATH}|${LIVENESS_PATH})/)[^/?#]+`] },
  {
    file: 'src/modules/customers/validation.ts',
    argument: "[US_EIN.pattern, FORMAT_PATTERNS['us-ssn'], FORMAT_PATTERNS['us-itin']].join('|')",
    patterns: [['^\\d{2}-?\\d{7}$', FORMAT_PATTERNS['us-ssn'], FORMAT_PATTERNS['us-itin']].join('|')],
  },
  { file: 'src/platform/http/text-input.ts', argument: "UNSTORABLE.source, 'g'", patterns: [] }, // the literal UNSTORABLE, checked as such
  { file: 'src/platform/http/validation.ts', argument: 'pattern', patterns: Object.values(FORMAT_PATTERNS) },
  {
    file: 'src/platform/http/validation.ts',
    argument: '`^${sign}[0-9]+${fraction}$`',
    patterns: ['^[0-9]+$', '^-?[0-9]+$', '^[0-9]+(\\.[0-9]+)?$', '^-?[0-9]+(\\.[0-9]+)?$'],
  },
  { file: 'src/platform/idempotency.ts', argument: 'KEY_PATTERN', patterns: [IDEMPOTENCY_KEY_HEADER['idempotency-key'].pattern] },
  { file: 'src/platform/ids.ts', argument: '`^${UUID}$`', patterns: ['^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'] },
  { file: 'src/platform/uma-address.ts', argument: 'UMA_ADDRESS_PATTERN', patterns: [UMA_ADDRESS_PATTERN] },
];

interface Pattern {
  source: string;
  flags: string;
  /** Where it is: `file:line`, or the OpenAPI document. */
  where: string;
  file?: string;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

interface Scan {
  literals: Pattern[];
  /** Regexes built at run time: `file` and argument text. */
  constructed: Array<{ file: string; argument: string; where: string }>;
  /** Strings written as a schema's `pattern:`. */
  schemaPatterns: Pattern[];
  /** `.match(x)` and the like where `x` is not known to be a regex. */
  stringsAsRegex: string[];
}

function scan(path: string): Scan {
  const file = relative(ROOT, path);
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const where = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const result: Scan = { literals: [], constructed: [], schemaPatterns: [], stringsAsRegex: [] };
  // Names bound to a regex in this file, so `.match(NAME)` is known to take one.
  const regexNames = new Set<string>();
  const isRegExpCall = (node: ts.Node): node is ts.NewExpression | ts.CallExpression =>
    (ts.isNewExpression(node) || ts.isCallExpression(node)) && ts.isIdentifier(node.expression) && node.expression.text === 'RegExp';
  const visit = (node: ts.Node): void => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const text = (node as ts.RegularExpressionLiteral).text;
      const end = text.lastIndexOf('/');
      result.literals.push({ source: text.slice(1, end), flags: text.slice(end + 1), where: where(node), file });
    } else if (isRegExpCall(node)) {
      result.constructed.push({ file, argument: (node.arguments ?? []).map((a) => a.getText(source)).join(', '), where: where(node) });
    } else if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
      if (node.initializer.kind === ts.SyntaxKind.RegularExpressionLiteral || isRegExpCall(node.initializer)) regexNames.add(node.name.text);
    } else if (ts.isPropertyAssignment(node) && node.name.getText(source) === 'pattern' && ts.isStringLiteralLike(node.initializer)) {
      result.schemaPatterns.push({ source: node.initializer.text, flags: 'u', where: where(node), file });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  // A second pass: a name may be used above the line that binds it.
  const visitCalls = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && ['match', 'matchAll', 'search'].includes(node.expression.name.text)) {
      const argument = node.arguments[0];
      const known = argument && (argument.kind === ts.SyntaxKind.RegularExpressionLiteral || isRegExpCall(argument) || (ts.isIdentifier(argument) && regexNames.has(argument.text)));
      if (!known) result.stringsAsRegex.push(`${where(node)}: ${node.getText(source)}`);
    }
    ts.forEachChild(node, visitCalls);
  };
  visitCalls(source);
  return result;
}

/** The patterns of the served OpenAPI document, and the formats it names. */
function openApiDocument(): { patterns: Pattern[]; formats: Set<string> } {
  const found: Pattern[] = [];
  const formats = new Set<string>();
  const walk = (value: unknown, path: string): void => {
    if (Array.isArray(value)) value.forEach((item, index) => walk(item, `${path}/${index}`));
    else if (value && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (key === 'pattern' && typeof item === 'string') found.push({ source: item, flags: 'u', where: `openapi.json ${path}` });
        else if (key === 'format' && typeof item === 'string') formats.add(item);
        else walk(item, `${path}/${key}`);
      }
    }
  };
  walk(JSON.parse(readFileSync(join(ROOT, 'openapi.json'), 'utf8')), '#');
  return { patterns: found, formats };
}

/**
 * The regexes behind each format the document uses that ajv-formats checks: a format that is a
 * regex, or the module-level regexes its function uses (`uri` tests URI and NOT_URI_FRAGMENT), and
 * those of the functions it calls. Corridor's own formats are checked as patterns (FORMAT_PATTERNS)
 * and date-time by parseDateTime (datetime.ts), whose regex is a literal of src/.
 */
function ajvFormatsPatterns(formats: Set<string>): Pattern[] {
  const path = require.resolve('ajv-formats/dist/formats');
  const { fullFormats } = require(path) as { fullFormats: Record<string, unknown> };
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const regexes = new Map<string, RegExp>();
  const functions = new Map<string, string>();
  for (const statement of source.statements) {
    if (ts.isFunctionDeclaration(statement) && statement.name) functions.set(statement.name.text, statement.getText(source));
    if (!ts.isVariableStatement(statement)) continue;
    for (const declaration of statement.declarationList.declarations) {
      const initializer = declaration.initializer;
      if (ts.isIdentifier(declaration.name) && initializer?.kind === ts.SyntaxKind.RegularExpressionLiteral) {
        const text = initializer.getText(source);
        const end = text.lastIndexOf('/');
        regexes.set(declaration.name.text, new RegExp(text.slice(1, end), text.slice(end + 1)));
      }
    }
  }
  const found = new Map<string, Pattern>();
  const add = (regex: RegExp, where: string) => found.set(`${regex.source}/${regex.flags}`, { source: regex.source, flags: regex.flags, where });
  const seen = new Set<string>();
  const follow = (code: string, format: string): void => {
    for (const name of code.match(/[A-Za-z_$][\w$]*/g) ?? []) {
      if (seen.has(name)) continue;
      seen.add(name);
      const regex = regexes.get(name);
      if (regex) add(regex, `ajv-formats ${name} (format ${format})`);
      const called = functions.get(name);
      if (called) follow(called, format);
    }
  };
  for (const format of [...formats].filter((f) => !CORRIDOR_FORMATS.has(f))) {
    const definition = fullFormats[format];
    expect(definition, `format ${format} is neither Corridor's nor ajv-formats'`).toBeDefined();
    const validate = definition && typeof definition === 'object' && 'validate' in definition ? definition.validate : definition;
    if (validate instanceof RegExp) add(validate, `ajv-formats format ${format}`);
    else if (typeof validate === 'function') follow(validate.toString(), format);
  }
  return [...found.values()];
}

/**
 * recheck's verdict on each distinct pattern. `g`, `y` and `d` change where a match starts or
 * what it reports, not how it backtracks, and are left out. Timeouts only stop a runaway check:
 * a verdict is reached by counting steps.
 */
const CHECK_PARAMETERS = {
  timeout: 30_000,
  attackTimeout: null,
  incubationTimeout: null,
  // An id's {8}-{4}-{4}-{4}-{12} is left to the exact automaton check, which is the faster one
  // for it; wider repeats such as {1,255} are fuzzed, faster than their large automata.
  maxRepeatCount: 50,
};

async function verdicts(patterns: Pattern[]): Promise<Map<string, Diagnostics>> {
  const byKey = new Map<string, Diagnostics>();
  for (const { source, flags } of patterns) {
    const checkedFlags = flags.replace(/[gyd]/g, '');
    const key = `/${source}/${checkedFlags}`;
    if (byKey.has(key)) continue;
    byKey.set(key, await check(source, checkedFlags, CHECK_PARAMETERS));
  }
  return byKey;
}

const keyOf = (p: Pattern) => `/${p.source}/${p.flags.replace(/[gyd]/g, '')}`;

/** Every pattern not rated safe, as a line naming where it is and how it fails; allow-listed ones apart. */
async function problems(patterns: Pattern[]): Promise<{ unsafe: string[]; allowedSeen: Set<(typeof ALLOWED)[number]> }> {
  const rated = await verdicts(patterns);
  const unsafe: string[] = [];
  const allowedSeen = new Set<(typeof ALLOWED)[number]>();
  for (const pattern of patterns) {
    const verdict = rated.get(keyOf(pattern))!;
    if (verdict.status === 'safe') continue;
    const allowed = ALLOWED.find((a) => a.file === pattern.file && a.source === pattern.source);
    if (allowed && verdict.status === 'vulnerable') {
      allowedSeen.add(allowed);
      continue;
    }
    const how =
      verdict.status === 'vulnerable'
        ? `${verdict.complexity.summary}, e.g. ${verdict.attack.pattern}`
        : `recheck could not decide (${verdict.error.kind}): simplify it, or allow-list it with a reason`;
    unsafe.push(`${pattern.where} /${pattern.source}/${pattern.flags}: ${how}`);
  }
  return { unsafe, allowedSeen };
}

const scans = tsFiles(join(ROOT, 'src')).map(scan);

describe('regular expressions are linear (ReDoS)', () => {
  it('every regex literal and constructed RegExp in src/, and every schema pattern written there', async () => {
    const constructedSites = scans.flatMap((s) => s.constructed);
    const unlisted = constructedSites.filter((site) => !CONSTRUCTED.some((c) => c.file === site.file && c.argument === site.argument));
    expect(unlisted.map((s) => `${s.where}: new RegExp(${s.argument}) is not in CONSTRUCTED: list it with the patterns it builds`)).toEqual([]);
    const stale = CONSTRUCTED.filter((c) => !constructedSites.some((site) => c.file === site.file && c.argument === site.argument));
    expect(stale.map((c) => `${c.file}: CONSTRUCTED lists new RegExp(${c.argument}), which is no longer there`)).toEqual([]);
    expect(scans.flatMap((s) => s.stringsAsRegex).map((line) => `${line}: pass a regex (a string is compiled as one and not checked here)`)).toEqual([]);

    const patterns = [
      ...scans.flatMap((s) => [...s.literals, ...s.schemaPatterns]),
      ...CONSTRUCTED.flatMap((c) => c.patterns.map((source) => ({ source, flags: '', where: `${c.file} new RegExp(${c.argument})`, file: c.file }))),
    ];
    const { unsafe, allowedSeen } = await problems(patterns);
    expect(unsafe).toEqual([]);
    expect(ALLOWED.filter((a) => !allowedSeen.has(a)).map((a) => `ALLOWED lists /${a.source}/ in ${a.file}, no longer a vulnerable pattern there: remove it`)).toEqual([]);
  }, 120_000);

  it('every pattern of the OpenAPI document, and the regexes of the formats ajv checks', async () => {
    const document = openApiDocument();
    const dependencyPatterns = ajvFormatsPatterns(document.formats);
    const digest = (p: Pattern) => createHash('sha256').update(`/${p.source}/${p.flags}`).digest('hex');
    const checkedOnce = dependencyPatterns.filter((p) => CHECKED_ONCE[digest(p)] !== undefined);
    expect(Object.keys(CHECKED_ONCE).filter((hash) => !checkedOnce.some((p) => digest(p) === hash))).toEqual([]);
    const patterns = [...document.patterns, ...dependencyPatterns.filter((p) => !checkedOnce.includes(p))];
    expect(document.patterns.length).toBeGreaterThan(0);
    expect((await problems(patterns)).unsafe).toEqual([]);
  }, 120_000);
});

describe('the linear rewrites mean what the patterns they replaced meant', () => {
  it('a PIX e-mail key: a dot inside the domain, neither its first nor its last character', () => {
    const quadratic = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/;
    const text = fc.string({ unit: fc.constantFrom('a', '.', '@', ' ', '-'), maxLength: 12 });
    fc.assert(
      fc.property(text, (value) => {
        expect(checkPixKey(value, 'EMAIL') === undefined).toBe(quadratic.test(value));
      }),
      { numRuns: 2_000 },
    );
    expect(checkPixKey('ana.souza@example.com.br', 'EMAIL')).toBeUndefined();
    expect(checkPixKey(`${'a'.repeat(65)}@example.com`, 'EMAIL')).toBe('is not an e-mail address');
  });

  it('a rate shown to significant digits ends its fraction in a non-zero digit', () => {
    expect(significant({ num: 3n, den: 2n }, 12)).toBe('1.5');
    expect(significant({ num: 1n, den: 10n ** 300n }, 15)).toBe(`0.${'0'.repeat(299)}1`);
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 30n }), fc.bigInt({ min: 1n, max: 10n ** 30n }), fc.integer({ min: 1, max: 20 }), (num, den, digits) => {
        expect(significant({ num, den }, digits)).not.toMatch(/\.(?:\d*0)?$/);
      }),
    );
  });

  it('an IPv6 address ending in a dotted quad, or carrying a zone, is judged by its groups', () => {
    const octet = fc.integer({ min: 0, max: 255 });
    fc.assert(
      fc.property(octet, octet, octet, octet, (a, b, c, d) => {
        const ipv4 = `${a}.${b}.${c}.${d}`;
        expect(refusedRange(`::ffff:${ipv4}`)).toBe(refusedRange(ipv4));
        expect(refusedRange(`0:0:0:0:0:ffff:${ipv4}%eth0`)).toBe(refusedRange(ipv4));
      }),
    );
  });
});
