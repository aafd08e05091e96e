import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A CommonJS package (or the CommonJS build of a dual one) loaded on its first use, not at
 * start-up: large validation libraries (viem: some 350 modules; libphonenumber's metadata)
 * served only a few routes yet were most of the time a process took to start. `require` is
 * synchronous, so the callers' checks stay synchronous; the first call pays the load once.
 */
export function loadOnFirstUse<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(specifier) as T);
}
