/**
 * `npm run build`: type-checks nothing (that is `npm run typecheck`) and bundles `src/` into
 * `dist/` with esbuild. Loading some 1,600 separate ES modules from node_modules was most of a
 * start (issue 13 §1); one bundle with the same code loads in a fraction of that. Entries:
 * `cli.js` (the `corridor` bin, `npm start`) and `screening-worker.js` (the documents
 * module's worker thread: PDF parses, pixel statistics; found beside the module that starts it). Code loaded on first use (`import()`)
 * goes to chunks of its own, so it still costs nothing at start-up.
 *
 * Kept out of the bundle, loaded from node_modules as before: packages that read files of their
 * own at run time or carry native parts (PGlite's wasm and data, sharp, swagger-ui's static
 * assets, pg's optional native binding), and the CommonJS packages that `loadOnFirstUse`
 * requires by name at run time.
 */
import { rmSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const EXTERNAL = ['@electric-sql/pglite', 'sharp', '@fastify/swagger-ui', 'pg-native'];
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Bundles the sources into `outdir` (emptied first), laid out as `dist/` is. The test run
 * bundles into a directory of its own (test/global-setup.ts): the processes its tests start
 * then load this run's code in a fraction of what compiling the sources through tsx costs each.
 */
export async function bundle(outdir) {
  rmSync(outdir, { recursive: true, force: true });
  await build({
    absWorkingDir: ROOT,
    entryPoints: { cli: 'src/cli.ts', 'screening-worker': 'src/modules/documents/screening/screening-worker.ts' },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    external: EXTERNAL,
    chunkNames: 'chunks/[name]-[hash]',
    logLevel: 'warning',
    // CommonJS packages in an ES module bundle call `require` for Node's built-ins: give them one.
    banner: { js: "import { createRequire as __corridorRequire } from 'node:module'; const require = __corridorRequire(import.meta.url);" },
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await bundle(`${ROOT}dist`);
