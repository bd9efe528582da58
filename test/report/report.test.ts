/**
 * The HTML report in a real browser: headless Chromium (Debian's, or the one inside the
 * `@sparticuz/chromium` devDependency: test/helpers/chromium.ts), driven by playwright-core. The page must load with no console error and no request leaving the
 * file, and every chart must have drawn its lines. The screenshot is docs/report.png
 * when UPDATE_REPORT_SCREENSHOT=1 (README), else a file in the test's temp directory.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { runDemo } from '../../src/demo.ts';
import { silentLogger } from '../../src/log.ts';
import { findChromium } from '../helpers/chromium.ts';
import { runCli } from '../helpers/cli.ts';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Test-only switch, read here rather than through config.ts. */
const updateScreenshot = process.env['UPDATE_REPORT_SCREENSHOT'] === '1';
const SCREENSHOT = new URL('../../docs/report.png', import.meta.url).pathname;

interface PageCheck {
  consoleErrors: string[];
  outsideRequests: string[];
  /** Paths in each chart's SVG, in page order. */
  chartPaths: number[];
  /** Longest polyline (`L` commands in one path) in each chart. */
  chartLongestLine: number[];
  tables: number;
}

async function openReport(browser: Browser, file: string, screenshot?: string): Promise<PageCheck> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 1500 } });
  const check: PageCheck = {
    consoleErrors: [],
    outsideRequests: [],
    chartPaths: [],
    chartLongestLine: [],
    tables: 0,
  };
  page.on('console', (message) => {
    if (message.type() === 'error') check.consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => check.consoleErrors.push(error.message));
  // Self-contained: anything but the file itself is recorded and refused.
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file:') || url.startsWith('data:')) return route.continue();
    check.outsideRequests.push(url);
    return route.abort();
  });
  await page.goto(`file://${file}`, { waitUntil: 'load' });
  const charts = await page.$$eval('.chart svg', (svgs) =>
    svgs.map((svg) => {
      const paths = [...svg.querySelectorAll('path')];
      const longest = Math.max(
        0,
        ...paths.map((p) => (p.getAttribute('d') ?? '').split('L').length - 1),
      );
      return { paths: paths.length, longest };
    }),
  );
  check.chartPaths = charts.map((c) => c.paths);
  check.chartLongestLine = charts.map((c) => c.longest);
  check.tables = await page.locator('table tbody tr').count();
  if (screenshot) await page.screenshot({ path: screenshot });
  await page.close();
  return check;
}

describe('report', () => {
  let dir: string;
  let browser: Browser;
  let report: string;
  let businessId: number;

  beforeAll(async () => {
    const chromiumBinary = await findChromium();
    console.info(`report test: Chromium from ${chromiumBinary.source} (${chromiumBinary.path})`);
    dir = await mkdtemp(join(tmpdir(), 'listings-report-'));
    // Two weeks of the sandbox: enough history for trends, alerts and reviews.
    const demo = await runDemo(loadConfig({}), silentLogger(), {
      days: 14,
      businessesPerAccount: 6,
      dataDir: join(dir, 'warehouse'),
      reportPath: join(dir, 'report.html'),
      endDate: '2026-06-30',
      write: () => {},
    });
    report = demo.reportPath;
    businessId = demo.summary.alertExamples[0]?.businessId ?? 10000001;
    browser = await chromium.launch({ executablePath: chromiumBinary.path, args: CHROMIUM_ARGS });
    // Fourteen simulated days of sync into PGlite, a browser start, and on a first run the
    // packaged Chromium unpacked: the one hook allowed more than the 30 s default.
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('opens offline in Chromium with no console error, and every chart is drawn', async () => {
    const html = await readFile(report, 'utf8');
    expect(html).not.toMatch(
      /<script|<link |@import|url\((?!#)|https?:\/\/[^"]*\.(css|js|woff2?)\b/i,
    );
    const check = await openReport(
      browser,
      report,
      updateScreenshot ? SCREENSHOT : join(dir, 'report.png'),
    );
    expect(check.consoleErrors).toEqual([]);
    expect(check.outsideRequests).toEqual([]);
    // Ranks (4 businesses × 2 keywords), accuracy, reviews.
    expect(check.chartPaths.length).toBe(10);
    for (const paths of check.chartPaths) expect(paths).toBeGreaterThan(10);
    // A line across the window: at least a week of points in every chart.
    for (const longest of check.chartLongestLine) expect(longest).toBeGreaterThanOrEqual(7);
    expect(check.tables).toBeGreaterThan(0);
    expect(existsSync(updateScreenshot ? SCREENSHOT : join(dir, 'report.png'))).toBe(true);
  });

  it('`report --business ID --days 7` charts every keyword of one business', async () => {
    const out = join(dir, 'one.html');
    const ran = await runCli(
      ['report', '--out', out, '--business', String(businessId), '--days', '7'],
      { PGLITE_DATA_DIR: join(dir, 'warehouse') },
    );
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain(`(2026-06-24 to 2026-06-30) written to ${out}`);
    const html = await readFile(out, 'utf8');
    expect(html).toContain(`(#${businessId})`);
    const check = await openReport(browser, out);
    expect(check.consoleErrors).toEqual([]);
    expect(check.chartPaths.length).toBeGreaterThan(4);
    for (const paths of check.chartPaths) expect(paths).toBeGreaterThan(10);
  });

  it('`report --business` names a business that does not exist', async () => {
    const ran = await runCli(['report', '--out', join(dir, 'x.html'), '--business', '999'], {
      PGLITE_DATA_DIR: join(dir, 'warehouse'),
    });
    // A usage error: exit 2, the sentence on standard error.
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain('No business with id 999');
  });
});
