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
