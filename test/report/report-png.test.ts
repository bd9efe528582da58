/**
 * docs/report.png is the report as it is now: `npm run report:screenshot`
 * (test/report/screenshot.ts) made it, and recorded beside it (docs/report.png.json) the
 * PNG's hash and the hashes of the files that decide the report's look
 * (test/report/report-png.ts). A change to one of them, a new ECharts, or a PNG put there
 * by other means fails here until the script is run again.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  currentStamp,
  SCREENSHOT_PATH,
  SCREENSHOT_VIEWPORT,
  type ScreenshotStamp,
  STAMP_PATH,
  staleness,
  TEMPLATE_FILES,
} from './report-png.ts';

const RENEW = 'docs/report.png is older than the report: run `npm run report:screenshot`';

/** A PNG's width and height, from its IHDR chunk. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

describe('docs/report.png', () => {
  const png = readFileSync(SCREENSHOT_PATH);
  const current = currentStamp(png);

  it("was made by the script from the report's current template", () => {
    expect(existsSync(STAMP_PATH), `${RENEW} (no docs/report.png.json)`).toBe(true);
    const recorded = JSON.parse(readFileSync(STAMP_PATH, 'utf8')) as ScreenshotStamp;
    expect(staleness(recorded, current), RENEW).toEqual([]);
    expect(Object.keys(recorded.template)).toEqual([...TEMPLATE_FILES]);
  });

  it('is the window it was shot at', () => {
    expect(pngSize(png)).toEqual(SCREENSHOT_VIEWPORT);
  });

  it('counts as stale when a template file, the PNG or ECharts changes', () => {
    const file = TEMPLATE_FILES[0];
    const edited = { ...current, template: { ...current.template, [file]: '0'.repeat(64) } };
    expect(staleness(edited, current)).toEqual([`${file} changed since`]);
    expect(staleness({ ...current, png: '0'.repeat(64) }, current)).toEqual([
      'docs/report.png is not the PNG recorded',
    ]);
    expect(staleness({ ...current, echarts: '5.0.0' }, current)).toEqual([
      `echarts: 5.0.0 then, ${current.echarts} now`,
    ]);
    // A record without a file the tree now names (a template file added since) is stale.
    const { [file]: _gone, ...rest } = current.template;
    expect(staleness({ ...current, template: rest }, current)).toEqual([`${file} changed since`]);
  });
});
