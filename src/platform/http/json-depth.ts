/**
 * Deepest nesting of arrays and objects a JSON body may have. No request of the API nests more
 * than a handful of levels; a body nested thousands deep (a few kilobytes) overflowed the stack
 * of every recursive walk over it (the text checks first) and was a 500.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * What a JSON body's brackets and member names show, read before it is parsed in one pass with no
 * recursion (brackets and quotes inside strings aside): more than MAX_JSON_DEPTH arrays and
 * objects open at once, or the first name an object has twice. JSON.parse keeps the last of a
 * repeated name and drops the other without a word, so `{"amount":1,"amount":100}` would move what
 * a reader of the first (a log, a proxy's check) did not see. Only a body that parses is judged
 * by its duplicate.
 */
export function scanJson(text: string): { tooDeep: true } | { duplicate: string } | undefined {
  // Names seen by each open container, innermost last; undefined for an array.
  const open: Array<Set<string> | undefined> = [];
  let expectName = false;
  let duplicate: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      let escaped = false;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) {
          escaped = true;
          i++;
        } else if (d === 0x22) break;
      }
      if (!expectName) continue;
      expectName = false;
      if (duplicate !== undefined) continue;
      const raw = text.slice(start + 1, i);
      let name = raw;
      if (escaped) {
        try {
          name = JSON.parse(text.slice(start, i + 1)) as string;
        } catch {
          continue; // not JSON: the parse that follows says so
        }
      }
      const names = open.at(-1)!;
      if (names.has(name)) duplicate = name;
      else names.add(name);
    } else if (c === 0x7b || c === 0x5b) {
      open.push(c === 0x7b ? new Set() : undefined);
      if (open.length > MAX_JSON_DEPTH) return { tooDeep: true };
      expectName = c === 0x7b;
    } else if (c === 0x5d || c === 0x7d) {
      open.pop();
      expectName = false;
    } else if (c === 0x2c) {
      expectName = open.at(-1) !== undefined;
    }
  }
  return duplicate === undefined ? undefined : { duplicate };
}
