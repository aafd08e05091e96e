/**
 * Deepest nesting of arrays and objects a JSON body may have. No request of the API nests more
 * than a handful of levels; a body nested thousands deep (a few kilobytes) overflowed the stack
 * of every recursive walk over it (the text checks first) and was a 500.
 */
export const MAX_JSON_DEPTH = 64;

/** Whether `text` opens more than MAX_JSON_DEPTH arrays and objects at once, brackets in strings aside: one pass, no recursion. */
export function nestsTooDeep(text: string): boolean {
  // Each level takes at least one character: a shorter body cannot be too deep.
  if (text.length <= MAX_JSON_DEPTH) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * The first name an object of `text` (well-formed JSON) has twice, if any: one pass, no
 * recursion. JSON.parse keeps the last and drops the other without a word, so
 * `{"amount":1,"amount":100}` would move what a reader of the first (a log, a proxy's check)
 * did not see.
 */
export function duplicateKey(text: string): string | undefined {
  // Cheap way out for most bodies: no name can repeat without a second object member.
  if (!text.includes(',')) return undefined;
  // Names seen by each open container, innermost last; undefined for an array.
  const open: Array<Set<string> | undefined> = [];
  let expectName = false;
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
      const raw = text.slice(start + 1, i);
      const name = escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : raw;
      const names = open.at(-1)!;
      if (names.has(name)) return name;
      names.add(name);
    } else if (c === 0x7b) {
      open.push(new Set());
      expectName = true;
    } else if (c === 0x5b) {
      open.push(undefined);
    } else if (c === 0x5d || c === 0x7d) {
      open.pop();
      expectName = false;
    } else if (c === 0x2c) {
      expectName = open.at(-1) !== undefined;
    }
  }
  return undefined;
}
