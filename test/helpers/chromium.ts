/**
 * A headless Chromium for the browser tests, with nothing to install by hand: Debian's
 * `/usr/bin/chromium` when the machine has it, else the build that ships inside the npm
 * devDependency `@sparticuz/chromium` (unpacked once into the temp directory by
 * `executablePath()`), so that `npm ci && npm test` is the whole set-up.
 */
import { existsSync } from 'node:fs';

const DEBIAN_CHROMIUM = '/usr/bin/chromium';

export interface ChromiumBinary {
  path: string;
  source: 'debian' | '@sparticuz/chromium';
}

export async function findChromium(): Promise<ChromiumBinary> {
  if (existsSync(DEBIAN_CHROMIUM)) return { path: DEBIAN_CHROMIUM, source: 'debian' };
  const { default: packaged } = await import('@sparticuz/chromium');
  return { path: await packaged.executablePath(), source: '@sparticuz/chromium' };
}
