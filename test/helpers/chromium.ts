/**
 * A headless Chromium for the browser tests, with nothing to install by hand: Debian's
 * `/usr/bin/chromium` when the machine has it, else the build that ships inside the npm
 * devDependency `@sparticuz/chromium`, so that `npm ci && npm test` is the whole set-up.
 *
 * The packaged build unpacks itself into the temporary directory (`executablePath()`,
 * about 60 MB of brotli, a few seconds of CPU). It is pointed at a directory of the
 * machine's temporary directory named by its version, outside the run's own (removed at
 * the end of each run, test/helpers/temporary-root.ts), so the next run finds it
 * unpacked; a marker written once it is whole tells a finished unpacking from one a
 * crashed run left half done.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testCacheDir } from './temporary-root.ts';

const DEBIAN_CHROMIUM = '/usr/bin/chromium';

/** The switches every headless launch here takes (playwright-core's `args`). */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ROOT = join(import.meta.dirname, '../..');

export interface ChromiumBinary {
  path: string;
  source: 'debian' | '@sparticuz/chromium';
}

export async function findChromium(): Promise<ChromiumBinary> {
  if (existsSync(DEBIAN_CHROMIUM)) return { path: DEBIAN_CHROMIUM, source: 'debian' };
  const { version } = JSON.parse(
    readFileSync(join(ROOT, 'node_modules/@sparticuz/chromium/package.json'), 'utf8'),
  ) as { version: string };
  const dir = join(testCacheDir(), `listings-sync-chromium-${version}`);
  const whole = join(dir, '.unpacked');
  if (!existsSync(whole)) rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // The package reads the temporary directory when it loads (its libraries' path) and when
  // it unpacks: both must be the cache directory.
  const previous = process.env['TMPDIR'];
  process.env['TMPDIR'] = dir;
  try {
    const { default: packaged } = await import('@sparticuz/chromium');
    const path = await packaged.executablePath();
    writeFileSync(whole, '');
    return { path, source: '@sparticuz/chromium' };
  } finally {
    if (previous === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = previous;
  }
}
