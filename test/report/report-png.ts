/**
 * What docs/report.png was made from, recorded beside it in docs/report.png.json by
 * `npm run report:screenshot` (test/report/screenshot.ts): the SHA-256 of the PNG itself,
 * the window it was shot at, the ECharts release, and the SHA-256 of each file that makes
 * the report's look (its template and style sheet, its charts, its words). A file's hash is
 * taken over its text with line ends as LF, so a checkout with CRLF agrees; git's file
 * times would not (a fresh clone dates every file at the clone).
 * test/report/report-png.test.ts compares the record with the tree.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

export const SCREENSHOT_PATH = join(ROOT, 'docs/report.png');
export const STAMP_PATH = join(ROOT, 'docs/report.png.json');
/** The window docs/report.png is shot at: the width the report is laid out for. */
export const SCREENSHOT_VIEWPORT = { width: 1200, height: 1500 } as const;

/** The files that decide how the report looks, from the repository's root. */
export const TEMPLATE_FILES = [
  'src/report/report-html.ts',
  'src/report/charts.ts',
  'src/report/counted.ts',
  'src/report/site-names.ts',
] as const;

export interface ScreenshotStamp {
  about: string;
  png: string;
  viewport: { width: number; height: number };
  echarts: string;
  template: Record<string, string>;
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** The stamp the tree calls for now, for a PNG of these bytes. */
export function currentStamp(png: Buffer): ScreenshotStamp {
  const { version } = JSON.parse(
    readFileSync(join(ROOT, 'node_modules/echarts/package.json'), 'utf8'),
  ) as { version: string };
  return {
    about:
      'docs/report.png was made by `npm run report:screenshot` from these files; test/report/report-png.test.ts fails when one has changed since',
    png: sha256(png),
    viewport: { ...SCREENSHOT_VIEWPORT },
    echarts: version,
    template: Object.fromEntries(
      TEMPLATE_FILES.map((file) => [
        file,
        sha256(readFileSync(join(ROOT, file), 'utf8').replace(/\r\n/g, '\n')),
      ]),
    ),
  };
}

/** What differs between the stamp recorded and the one the tree calls for: none when fresh. */
export function staleness(recorded: ScreenshotStamp, current: ScreenshotStamp): string[] {
  const differences: string[] = [];
  if (recorded.png !== current.png) differences.push('docs/report.png is not the PNG recorded');
  if (
    recorded.viewport?.width !== current.viewport.width ||
    recorded.viewport?.height !== current.viewport.height
  )
    differences.push(`viewport: shot at ${JSON.stringify(recorded.viewport)}`);
  if (recorded.echarts !== current.echarts)
    differences.push(`echarts: ${recorded.echarts} then, ${current.echarts} now`);
  for (const [file, hash] of Object.entries(current.template)) {
    if (recorded.template?.[file] !== hash) differences.push(`${file} changed since`);
  }
  return differences;
}
