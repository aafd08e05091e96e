import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser } from 'playwright-core';

/**
 * Headless Chromium for every browser test, brought by the npm registry: `@sparticuz/chromium`
 * carries chrome-headless-shell packed with Brotli, together with the NSS libraries it links
 * against, so `npm test` needs nothing from the operating system's package manager and never
 * looks at a system Chromium. The package is unpacked once per installed version into
 * node_modules/.cache (a few seconds), then each test file launches it through playwright-core.
 */
const root = new URL('../../', import.meta.url).pathname;

/** Unpacks the browser (idempotent; concurrent test workers race to one atomic rename). */
async function unpacked(): Promise<string> {
  const { version } = JSON.parse(await readFile(join(root, 'node_modules', '@sparticuz', 'chromium', 'package.json'), 'utf8')) as { version: string };
  const dir = join(root, 'node_modules', '.cache', `sparticuz-chromium-${version}`);
  if (existsSync(join(dir, 'chromium'))) return dir;
  const staging = `${dir}.${process.pid}.tmp`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  // The package's own unpacker writes into os.tmpdir(); a child process points that at `staging`.
  // AWS_EXECUTION_ENV is the package's switch for unpacking the NSS libraries too (it ships them
  // for Amazon Linux 2023, and a Debian without a system browser has none either).
  const unpack = "import Chromium from '@sparticuz/chromium'; await Chromium.executablePath();";
  await promisify(execFile)(process.execPath, ['--input-type=module', '-e', unpack], {
    cwd: root,
    env: { ...process.env, TMPDIR: staging, AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs20.x' },
  }).catch(async (error: unknown) => {
    await rm(staging, { recursive: true, force: true });
    throw error;
  });
  await writeFile(join(staging, 'fonts.conf'), `<?xml version="1.0"?>\n<fontconfig><dir>${dir}/fonts/fonts</dir><cachedir>${dir}/fonts-cache</cachedir></fontconfig>\n`);
  try {
    await rename(staging, dir);
  } catch (error) {
    // Another worker finished first: use its copy.
    await rm(staging, { recursive: true, force: true });
    if (!existsSync(join(dir, 'chromium'))) throw error;
  }
  return dir;
}

/**
 * Launches headless Chromium; the caller closes it. Multi-process (no `--single-process`, which the
 * package suggests for Lambda): in single-process mode closing a test's page took the whole browser
 * down, so the next test of the file found it closed.
 */
export async function launchBrowser(): Promise<Browser> {
  const dir = await unpacked();
  return chromium.launch({
    executablePath: join(dir, 'chromium'),
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    env: {
      ...process.env,
      LD_LIBRARY_PATH: [join(dir, 'al2023', 'lib'), process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'),
      FONTCONFIG_FILE: join(dir, 'fonts.conf'),
    },
  });
}

/** Serves `app` on a free local port for a browser to open; answers its origin (`http://localhost:<port>`). */
export async function servedAt(app: { listen(options: { port: number; host: string }): Promise<unknown>; server: { address(): unknown } }): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://localhost:${(app.server.address() as { port: number }).port}`;
}
