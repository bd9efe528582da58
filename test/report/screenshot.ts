/**
 * `npm run report:screenshot`: docs/report.png from the report as it is now. Runs the demo
 * as `npm start` does (its defaults: 30 days after the first sync, ending yesterday) into
 * a temporary embedded PGlite, shoots the top of its report in headless Chromium
 * (test/helpers/chromium.ts) at 1200 × 1500 px, and records what it was made from in
 * docs/report.png.json (test/report/report-png.ts), which test/report/report-png.test.ts
 * holds to the tree. A few minutes, nearly all of them the demo's sync (141 s of CPU and
 * 4.8 min on the clock on a loaded 2-core machine).
 *
 * `-- --report FILE` shoots an existing report instead of running the demo, and
 * `-- --width 480 --out FILE` shoots at another width (`--full-page` for the whole page);
 * either writes only the PNG named by `--out`, never docs/report.png or its record.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { loadConfig } from '../../src/config/index.ts';
import { runDemo } from '../../src/demo/demo.ts';
import { silentLogger } from '../../src/log.ts';
import { CHROMIUM_ARGS, findChromium } from '../helpers/chromium.ts';
import { currentStamp, SCREENSHOT_PATH, SCREENSHOT_VIEWPORT, STAMP_PATH } from './report-png.ts';

const { values } = parseArgs({
  options: {
    report: { type: 'string' },
    out: { type: 'string' },
    width: { type: 'string' },
    height: { type: 'string' },
    'full-page': { type: 'boolean', default: false },
  },
});
const docs = values.out === undefined;
if (docs && (values.report || values.width || values.height || values['full-page'])) {
  console.error(
    'report:screenshot: --report, --width, --height and --full-page need --out FILE: docs/report.png is always the demo at 1200 × 1500 px',
  );
  process.exit(2);
}
const out = docs ? SCREENSHOT_PATH : resolve(values.out as string);
const viewport = {
  width: Number(values.width ?? SCREENSHOT_VIEWPORT.width),
  height: Number(values.height ?? SCREENSHOT_VIEWPORT.height),
};

const dir = await mkdtemp(join(tmpdir(), 'listings-report-png-'));
try {
  let report = values.report ? resolve(values.report) : '';
  if (!report) {
    console.info('report:screenshot: running the demo (its defaults) into a temporary PGlite…');
    const demo = await runDemo(loadConfig({}), silentLogger(), {
      dataDir: join(dir, 'demo'),
      reportPath: join(dir, 'report.html'),
    });
    report = demo.reportPath;
    console.info(`report:screenshot: the demo's report, ${demo.startDate} to ${demo.endDate}`);
  }
  const binary = await findChromium();
  const browser = await chromium.launch({ executablePath: binary.path, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage({ viewport });
    // The report is self-contained: nothing but the file itself is loaded.
    await page.route('**/*', (route) =>
      route.request().url().startsWith('file:') ? route.continue() : route.abort(),
    );
    await page.goto(`file://${report}`, { waitUntil: 'load' });
    await page.screenshot({ path: out, fullPage: values['full-page'] });
  } finally {
    await browser.close();
  }
  if (docs) {
    const stamp = currentStamp(await readFile(out));
    await writeFile(STAMP_PATH, `${JSON.stringify(stamp, null, 2)}\n`);
    console.info(`report:screenshot: ${out} and its record ${STAMP_PATH} written`);
  } else {
    console.info(`report:screenshot: ${out} written (${viewport.width} × ${viewport.height} px)`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
