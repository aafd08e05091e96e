import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

/**
 * README's configuration table is the operator's only reference: every variable loadConfig reads
 * is a row there, every row is read, a literal default is the value Corridor takes when the
 * variable is unset, and a number's range is the one it enforces.
 */
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

interface Row {
  default: string;
  meaning: string;
}

function configurationTable(): Map<string, Row> {
  const section = readme.split(/^## Configuration$/m)[1]!.split(/^## /m)[0]!;
  const rows = new Map<string, Row>();
  for (const line of section.split('\n')) {
    const cells = line.split(/(?<!\\)\|/).map((cell) => cell.trim());
    // | `NAME` (/ `NAME`) | default | meaning |
    if (cells.length !== 5 || !cells[1]!.startsWith('`')) continue;
    for (const [, name] of cells[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) rows.set(name!, { default: cells[2]!, meaning: cells[3]! });
  }
  return rows;
}

/** The variables loadConfig reads, found by handing it an environment that records each read. */
function variablesRead(): Set<string> {
  const read = new Set<string>();
  const env = new Proxy({} as NodeJS.ProcessEnv, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return Reflect.get(target, name) as unknown;
    },
  });
  loadConfig(env);
  return read;
}

const rows = configurationTable();
const read = variablesRead();

describe("README's configuration table", () => {
  it('lists exactly the variables Corridor reads', () => {
    expect(rows.size).toBeGreaterThan(40);
    expect([...read].filter((name) => !rows.has(name)), 'read but not documented').toEqual([]);
    expect([...rows.keys()].filter((name) => !read.has(name)), 'documented but never read').toEqual([]);
  });

  it('gives, for each literal default, the value Corridor takes when the variable is unset', () => {
    const unset = loadConfig({});
    let compared = 0;
    for (const [name, row] of rows) {
      const literal = /^`([^`$]+)`$/.exec(row.default);
      if (!literal) continue;
      compared++;
      expect(loadConfig({ [name]: literal[1] }), `${name} documented default ${literal[1]}`).toEqual(unset);
    }
    expect(compared).toBeGreaterThan(25);
  });

  it("states each whole-number variable's range as Corridor enforces it", () => {
    let ranged = 0;
    for (const name of read) {
      let error: unknown;
      try {
        loadConfig({ [name]: '999999999999' });
      } catch (thrown) {
        error = thrown;
      }
      const range = error instanceof ConfigError ? / must be between (\d+) and (\d+)/.exec(error.message) : null;
      if (!range) continue;
      ranged++;
      expect(rows.get(name)?.meaning, `${name} is ${range[1]}–${range[2]}`).toContain(`${range[1]}–${range[2]}`);
    }
    expect(ranged).toBeGreaterThan(20);
  });
});
