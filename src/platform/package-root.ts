import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory holding Corridor's package.json, and beside it the files the code reads at run
 * time (migrations/, reference-data/). Found by walking up from this module rather than by a
 * fixed number of `..`: from the sources a module sits at its own depth under `src/`, while the
 * build bundles every module into `dist/cli.js`, one level under the root.
 */
function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  return dir;
}

export const PACKAGE_ROOT = findPackageRoot();

/** A path inside the package, e.g. `packagePath('migrations')`. */
export function packagePath(...segments: string[]): string {
  return join(PACKAGE_ROOT, ...segments);
}
