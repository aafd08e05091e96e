import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, scanJson } from '../../src/platform/http/json-depth.js';

/** platform/http/json-depth.ts: what a JSON body's brackets and names show before it is parsed. */
describe('scanJson', () => {
  it(`passes ${MAX_JSON_DEPTH} levels of nesting and refuses one more`, () => {
    const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    expect(scanJson(nested(MAX_JSON_DEPTH))).toBeUndefined();
    expect(scanJson(nested(MAX_JSON_DEPTH + 1))).toEqual({ tooDeep: true });
  });

  it('reads the strings of an array as values, never as names', () => {
    expect(scanJson('{"a":["x","x"],"b":[1,"a","b",{"c":["c","c"]}]}')).toBeUndefined();
  });

  it('names the first name an object has twice', () => {
    expect(scanJson('{"a":1,"b":1,"b":2,"a":2}')).toEqual({ duplicate: 'b' });
    expect(scanJson('{"x":{"b":1,"b":2},"a":1,"a":2}')).toEqual({ duplicate: 'b' });
  });

  it('reads an escaped quote as part of its string', () => {
    expect(scanJson('{"a\\"b":1,"a\\"b":2}')).toEqual({ duplicate: 'a"b' });
    expect(scanJson('{"a":"\\"","b":"\\"\\\\","a\\\\":1}')).toBeUndefined();
  });
});
