/** Bundles the sources into `outdir` as `dist/` is laid out (scripts/build.mjs). */
export function bundle(outdir: string): Promise<void>;
