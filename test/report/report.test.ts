/**
 * The HTML report in a real browser: headless Chromium (Debian's, or the one inside the
 * `@sparticuz/chromium` devDependency: test/helpers/chromium.ts), driven by playwright-core.
 * The page must load with no console error and no request leaving the file, every chart
 * must have drawn its lines, and at 1200 px no table cell may wrap, no table overflow and
 * no chart text overlap another (measured boxes). Every legend item's marker and text are
 * measured against every other item's, at 1200 px and at a phone's 480 px; each chart's
 * day labels are distinct for windows of 1, 2, 7 and 90 days; no business id is cut; the
 * scorecard is in health order (computed here from the tables) and sorts on a click.
 * At 1200 and 480 px every chart text reads at 10 CSS px or more as drawn (its font size
 * times the scale its SVG is drawn at), none runs out of its chart, and no text is cut
 * where its line has room for it (`MEASURE_READING`). docs/report.png is made by
 * `npm run report:screenshot` (test/report/screenshot.ts); this file shoots its own into
 * the test's temp directory.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { runDemo } from '../../src/demo/demo.ts';
import { silentLogger } from '../../src/log.ts';
import {
  accuracyChart,
  rankChart,
  reviewChart,
  siteColors,
  visibilityChart,
} from '../../src/report/charts.ts';
import { REPORT_CSS } from '../../src/report/report-html.ts';
import { siteLabel } from '../../src/report/site-names.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { CHROMIUM_ARGS, findChromium } from '../helpers/chromium.ts';
import { type CommandWarehouse, createCommandWarehouse, runCli } from '../helpers/cli.ts';
import { type ExpectedScore, expectedScorecard } from './scorecard-expected.ts';

interface PageCheck {
  consoleErrors: string[];
  outsideRequests: string[];
  /** Paths in each chart's SVG, in page order. */
  chartPaths: number[];
  /** Longest polyline (`L` commands in one path) in each chart. */
  chartLongestLine: number[];
  tables: number;
  /** Table cells whose text runs onto a second line, as `text` (table n). */
  wrappedCells: string[];
  /** Tables wider than the page's content column, and the page's horizontal overflow. */
  overflowing: string[];
  /** Pairs of text boxes that overlap within one chart (legend over axis, labels over each other). */
  chartOverlaps: string[];
  /** Legend parts that overlap (`MEASURE_LEGENDS`), and the legend items per chart. */
  legendOverlaps: string[];
  legendItems: number[];
  /** Day labels per chart. */
  dayLabels: string[][];
  /** Business ids drawn cut. */
  cutIds: string[];
  /** Wide tables that scroll sideways in their own box, by their headers. */
  scrollsSideways: string[];
  /** Business ids in the movers tables (those with a "rank now" column). */
  moversIds: number;
  /** Chart and legend text as drawn, and text cut (`MEASURE_READING`). */
  reading: Reading;
}

/** The width the report must lay out at without a wrap or an overlap (issue 22). */
const VIEWPORT = { width: 1200, height: 1500 };
/** A phone's width: the charts shrink, the legends wrap, and still nothing overlaps. */
const NARROW = { width: 480, height: 900 };

/**
 * Every legend item of every chart, as boxes: its marker(s) and its text. Reads the
 * report's HTML legends (`ul.legend li`) and ECharts' own SVG legend, should one come
 * back: ECharts draws each item's marker paths and text under one `transform`, shared
 * with the item's hit area (`ecmeta_ssr_type="legend"`). Every part of every item is
 * compared with every part of every other item, and an item's marker with its own text.
 */
const MEASURE_LEGENDS = `(() => {
  const overlaps = [];
  const items = [];
  const textBox = (node) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    return range.getBoundingClientRect();
  };
  document.querySelectorAll('.chart').forEach((chart, n) => {
    const found = [];
    chart.querySelectorAll('ul.legend li').forEach((li) => {
      found.push({ label: li.textContent, parts: [
        ['marker', li.querySelector('.mark').getBoundingClientRect()],
        ['text', textBox(li.querySelector('span'))],
      ] });
    });
    chart.querySelectorAll('svg [ecmeta_ssr_type="legend"]').forEach((hit) => {
      const at = hit.getAttribute('transform');
      const same = [...hit.ownerSVGElement.querySelectorAll('[transform]')]
        .filter((e) => e !== hit && e.getAttribute('transform') === at);
      const texts = same.filter((e) => e.tagName === 'text');
      found.push({ label: texts.map((t) => t.textContent).join(' '), parts: [
        ...same.filter((e) => e.tagName === 'path').map((e) => ['marker', e.getBoundingClientRect()]),
        ...texts.map((e) => ['text', e.getBoundingClientRect()]),
      ] });
    });
    items.push(found.length);
    const hit = (a, b) =>
      Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
      Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
    for (let i = 0; i < found.length; i++) {
      const own = found[i].parts;
      for (const [kind, box] of own.filter(([k]) => k === 'marker')) {
        for (const [, text] of own.filter(([k]) => k === 'text')) {
          if (hit(box, text)) overlaps.push('chart ' + n + ': "' + found[i].label + '" marker over its text');
        }
      }
      for (let j = i + 1; j < found.length; j++) {
        for (const [kindA, a] of own) {
          for (const [kindB, b] of found[j].parts) {
            if (hit(a, b)) overlaps.push('chart ' + n + ': "' + found[i].label + '" ' + kindA + ' over "' + found[j].label + '" ' + kindB);
          }
        }
      }
    }
  });
  return { overlaps, items };
})()`;

async function measureLegends(page: Page): Promise<{ overlaps: string[]; items: number[] }> {
  return page.evaluate(MEASURE_LEGENDS);
}

/** A day label as the charts print it: "Nov 22", or "Nov 22, 2026" in a window over a year. */
const DAY_LABEL = /^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{1,2}(, \d{4})?$/;

/** The day labels each chart drew, in page order. */
async function dayLabels(page: Page): Promise<string[][]> {
  const texts = await page.$$eval('.chart svg', (svgs) =>
    svgs
      .filter((svg) => svg.getClientRects().length > 0)
      .map((svg) => [...svg.querySelectorAll('text')].map((t) => (t.textContent ?? '').trim())),
  );
  return texts.map((chart) => chart.filter((text) => DAY_LABEL.test(text)));
}

/**
 * Business ids ("#20000014") the page shows cut: a part of the id outside the box of an
 * ancestor that clips its overflow (an ellipsis hides it). Read from the text as drawn.
 */
const CUT_IDS = `(() => {
  const cut = [];
  const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.textContent.matchAll(/#\\d{5,}/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const box = range.getBoundingClientRect();
      for (let el = node.parentElement; el && el !== document.body; el = el.parentElement) {
        if (getComputedStyle(el).overflowX === 'visible') continue;
        const clip = el.getBoundingClientRect();
        if (box.right > clip.right + 0.5 || box.left < clip.left - 0.5) {
          cut.push(match[0] + ' in "' + el.textContent.trim().slice(0, 60) + '"');
          break;
        }
      }
    }
  }
  return cut;
})()`;

/**
 * Layout measured in the page: every cell on one line, no table overflowing, no text on
 * text. Plain JavaScript run in the page (this project's types have no DOM).
 */
const MEASURE_LAYOUT = `(() => {
  const wrappedCells = [];
  const overflowing = [];
  const chartOverlaps = [];
  const main = document.querySelector('main');
  const contentRight =
    main.getBoundingClientRect().right - Number.parseFloat(getComputedStyle(main).paddingRight);
  document.querySelectorAll('table').forEach((table, n) => {
    const right = table.getBoundingClientRect().right;
    if (right > contentRight + 0.5) overflowing.push('table ' + n + ': right edge ' + right + ' > ' + contentRight);
    table.querySelectorAll('td, th').forEach((cell) => {
      const range = document.createRange();
      range.selectNodeContents(cell);
      const tops = [...range.getClientRects()].filter((r) => r.width > 0).map((r) => r.top);
      // Inline boxes of one line may differ in top by a pixel or two (fonts, spans).
      if (tops.length > 1 && Math.max(...tops) - Math.min(...tops) > 6) {
        wrappedCells.push('"' + cell.textContent + '" (table ' + n + ')');
      }
    });
  });
  if (document.documentElement.scrollWidth > window.innerWidth) {
    overflowing.push('page: ' + document.documentElement.scrollWidth + ' px wide');
  }
  document.querySelectorAll('.chart svg').forEach((svg, n) => {
    const boxes = [...svg.querySelectorAll('text')]
      .filter((t) => (t.textContent || '').trim())
      .map((t) => ({ text: t.textContent, box: t.getBoundingClientRect() }));
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i].box;
        const b = boxes[j].box;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1) chartOverlaps.push('chart ' + n + ': "' + boxes[i].text + '" over "' + boxes[j].text + '"');
      }
    }
  });
  const scrollsSideways = [...document.querySelectorAll('.scroll')]
    .filter((box) => box.scrollWidth > box.clientWidth + 1)
    .map((box) => [...box.querySelectorAll('th')].map((th) => th.textContent).join('|') +
      ': ' + box.scrollWidth + ' > ' + box.clientWidth);
  return { wrappedCells, overflowing, chartOverlaps, scrollsSideways };
})()`;

async function measureLayout(
  page: Page,
): Promise<Pick<PageCheck, 'wrappedCells' | 'overflowing' | 'chartOverlaps' | 'scrollsSideways'>> {
  return page.evaluate(MEASURE_LAYOUT);
}

interface Reading {
  /** The smallest chart or legend text drawn, in CSS px. */
  smallest: number;
  /** Chart and legend texts drawn under 10 CSS px, as `text: px (chart n)`. */
  small: string[];
  /** Chart texts drawn (partly) outside their chart's box. */
  outside: string[];
  /** Text clipped by its box while the line it sits on has room for the rest. */
  cut: string[];
  /** The SVGs drawn (a chart's other drawing is hidden). */
  charts: number;
}

/**
 * What a reader sees of the text: each chart text's size as drawn (its computed font size
 * times the scale of its SVG on the screen, `getScreenCTM`), whether it lies inside its
 * chart's box, the legends' text size, and text cut where it would fit. Cut: a box that
 * clips its overflow (an ellipsis) holding more than it shows (scrollWidth > clientWidth)
 * while the rest of its line, in its block, has room for what is hidden (a name in a
 * cell, in a list item; a clipping cell itself is left to the table's widths and to
 * `wrappedCells`); and a table label on a phone (`td::before`, the column's header)
 * clipped narrower than its text, measured in its computed font.
 */
const MEASURE_READING = `(() => {
  const small = [];
  const outside = [];
  const cut = [];
  let smallest = Infinity;
  const shown = [...document.querySelectorAll('.chart svg')].filter((svg) => svg.getClientRects().length);
  shown.forEach((svg, n) => {
    const frame = svg.getBoundingClientRect();
    for (const text of svg.querySelectorAll('text')) {
      const words = (text.textContent || '').trim();
      if (!words) continue;
      const m = text.getScreenCTM();
      const px = Number.parseFloat(getComputedStyle(text).fontSize) * Math.hypot(m.a, m.b);
      smallest = Math.min(smallest, px);
      if (px < 9.99) small.push(words + ': ' + px.toFixed(1) + ' px (chart ' + n + ')');
      const box = text.getBoundingClientRect();
      if (box.left < frame.left - 0.5 || box.right > frame.right + 0.5 ||
          box.top < frame.top - 0.5 || box.bottom > frame.bottom + 0.5) {
        outside.push(words + ' (chart ' + n + ')');
      }
    }
  });
  for (const span of document.querySelectorAll('ul.legend li span')) {
    if (!span.getClientRects().length) continue;
    const px = Number.parseFloat(getComputedStyle(span).fontSize);
    smallest = Math.min(smallest, px);
    if (px < 9.99) small.push(span.textContent + ': ' + px + ' px (legend)');
  }
  const blockOf = (el) => {
    let block = el.parentElement;
    while (block && getComputedStyle(block).display.startsWith('inline')) block = block.parentElement;
    return block;
  };
  for (const el of document.querySelectorAll('main *')) {
    if (el.closest('svg') || el.classList.contains('scroll')) continue;
    if (getComputedStyle(el).overflowX === 'visible' || !el.getClientRects().length) continue;
    const hidden = el.scrollWidth - el.clientWidth;
    if (hidden <= 1) continue;
    const block = blockOf(el);
    if (!block || getComputedStyle(el).display === 'table-cell') continue;
    const own = el.getBoundingClientRect();
    // The right end of the line el sits on: the text of its block beside it.
    let right = own.right;
    const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (el.contains(node)) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const r of range.getClientRects()) {
        if (r.width > 0 && r.bottom > own.top + 1 && r.top < own.bottom - 1) right = Math.max(right, r.right);
      }
    }
    const style = getComputedStyle(block);
    const end = block.getBoundingClientRect().right - Number.parseFloat(style.borderRightWidth) -
      Number.parseFloat(style.paddingRight);
    if (hidden <= end - right) {
      cut.push('"' + el.textContent.trim() + '": ' + hidden + ' px hidden, ' + Math.round(end - right) + ' px free');
    }
  }
  const context = document.createElement('canvas').getContext('2d');
  for (const td of document.querySelectorAll('td[data-label]')) {
    const label = td.dataset.label;
    if (!label || !td.getClientRects().length) continue;
    const before = getComputedStyle(td, '::before');
    if (before.display === 'none' || before.content === 'none' || before.overflowX === 'visible') continue;
    context.font = before.fontStyle + ' ' + before.fontWeight + ' ' + before.fontSize + ' ' + before.fontFamily;
    const room = Number.parseFloat(before.width) - Number.parseFloat(before.paddingLeft) - Number.parseFloat(before.paddingRight);
    if (context.measureText(label).width > room + 0.5) cut.push('label "' + label + '": ' + Math.round(room) + ' px wide');
  }
  return { smallest, small, outside, cut: [...new Set(cut)], charts: shown.length };
})()`;

async function measureReading(page: Page): Promise<Reading> {
  return page.evaluate(MEASURE_READING);
}

async function openReport(
  browser: Browser,
  file: string,
  screenshot?: string,
  viewport = VIEWPORT,
): Promise<PageCheck> {
  const page = await browser.newPage({ viewport });
  const check: PageCheck = {
    consoleErrors: [],
    outsideRequests: [],
    chartPaths: [],
    chartLongestLine: [],
    tables: 0,
    wrappedCells: [],
    overflowing: [],
    chartOverlaps: [],
    legendOverlaps: [],
    legendItems: [],
    dayLabels: [],
    cutIds: [],
    scrollsSideways: [],
    moversIds: 0,
    reading: { smallest: 0, small: [], outside: [], cut: [], charts: 0 },
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
  // The drawings shown: each chart has one for a wide card and one for a narrow one.
  const charts = await page.$$eval('.chart svg', (svgs) =>
    svgs
      .filter((svg) => svg.getClientRects().length > 0)
      .map((svg) => {
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
  Object.assign(check, await measureLayout(page));
  const legends = await measureLegends(page);
  check.legendOverlaps = legends.overlaps;
  check.legendItems = legends.items;
  check.dayLabels = await dayLabels(page);
  check.cutIds = await page.evaluate(CUT_IDS);
  check.reading = await measureReading(page);
  check.moversIds = await page.$$eval('table', (tables) =>
    tables
      .filter((t) => [...t.querySelectorAll('th')].some((th) => th.textContent === 'rank now'))
      .reduce((n, t) => n + ((t.textContent ?? '').match(/#\d{5,}/g) ?? []).length, 0),
  );
  if (screenshot) await page.screenshot({ path: screenshot });
  await page.close();
  return check;
}

/**
 * `charts` charts drawn (one drawing of each), every text of them and of their legends
 * at 10 CSS px or more as drawn and inside its chart, and no text cut where it fits.
 */
function expectReadable(reading: Reading, charts: number): void {
  expect(reading.charts).toBe(charts);
  expect(reading.small).toEqual([]);
  expect(reading.smallest).toBeGreaterThanOrEqual(9.99);
  expect(reading.outside).toEqual([]);
  expect(reading.cut).toEqual([]);
}

/** The last day of the charts drawn from made-up data. */
const END = '2026-06-30';

function dayBefore(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);
}

/** "Jun 30": how a day reads on the axis, written here rather than taken from charts.ts. */
function dayText(day: string): string {
  const date = new Date(`${day}T00:00:00Z`);
  return `${date.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' })} ${date.getUTCDate()}`;
}

/** A rank per day over `days` days ending on `END`, wandering between 1 and 9. */
function dayPoints(days: number, offset: number): { day: string; rank: number }[] {
  return Array.from({ length: days }, (_, i) => ({
    day: dayBefore(END, days - 1 - i),
    rank: 1 + ((i + offset) % 9),
  }));
}

/** Charts on a page styled as the report is, two to a row as its rank charts are. */
function chartsPage(charts: string[]): string {
  return `<!doctype html><meta name="viewport" content="width=device-width, initial-scale=1"><style>${REPORT_CSS}</style><main><div class="grid">${charts
    .map((chart) => `<div class="card chart">${chart}</div>`)
    .join('')}</div></main>`;
}

/**
 * The scorecard's default order, computed from the tables (test/report/scorecard-expected.ts,
 * not the report's views or queries): the lowest health first, then the higher need, then
 * the lower id. `asOf` is the scorecard's `now()`, which the table carries.
 */
async function scorecardOrder(
  warehouse: Warehouse,
  asOf: Date,
  first: string,
  last: string,
): Promise<ExpectedScore[]> {
  return expectedScorecard(warehouse.db, asOf, first, last);
}

describe('report', () => {
  let dir: string;
  let target: CommandWarehouse;
  let browser: Browser;
  let report: string;
  let businessId: number;
  let lastDay: string;

  beforeAll(async () => {
    const chromiumBinary = await findChromium();
    console.info(`report test: Chromium from ${chromiumBinary.source} (${chromiumBinary.path})`);
    dir = await mkdtemp(join(tmpdir(), 'listings-report-'));
    // The report commands below are handed this warehouse (PGLITE_DATA_DIR names it).
    target = await createCommandWarehouse('pglite');
    // Two weeks of the sandbox: enough history for trends, alerts and reviews.
    const demo = await runDemo(loadConfig({}), silentLogger(), {
      days: 14,
      businessesPerAccount: 6,
      endDate: '2026-06-30',
      warehouse: target.warehouse,
      reportPath: join(dir, 'report.html'),
      write: () => {},
    });
    lastDay = demo.endDate;
    report = demo.reportPath;
    businessId = demo.summary.alertExamples[0]?.businessId ?? 10000001;
    browser = await chromium.launch({ executablePath: chromiumBinary.path, args: CHROMIUM_ARGS });
    // Fourteen simulated days of sync into PGlite and a browser start: a hang guard longer
    // than the suite's.
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await target?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('opens offline in Chromium with no console error, and every chart is drawn', async () => {
    const html = await readFile(report, 'utf8');
    expect(html).not.toMatch(
      /<script[^>]*\bsrc=|<link |@import|url\((?!#)|https?:\/\/[^"]*\.(css|js|woff2?)\b/i,
    );
    // One inline script: the Businesses table's sorting.
    expect(html.match(/<script/g)).toHaveLength(1);
    const check = await openReport(browser, report, join(dir, 'report.png'));
    expect(check.consoleErrors).toEqual([]);
    expect(check.outsideRequests).toEqual([]);
    // Visibility per site, ranks (4 businesses × 2 keywords), accuracy, reviews.
    expect(check.chartPaths.length).toBe(11);
    for (const paths of check.chartPaths) expect(paths).toBeGreaterThan(10);
    // Every chart draws lines, and some line crosses the whole window (14 days and more: 13 segments or more);
    // a keyword unranked on some days draws shorter pieces.
    for (const longest of check.chartLongestLine) expect(longest).toBeGreaterThanOrEqual(3);
    expect(Math.max(...check.chartLongestLine)).toBeGreaterThanOrEqual(13);
    expect(check.tables).toBeGreaterThan(0);
    // At 1200 px nothing wraps, overflows or overlaps (measured boxes, not a look).
    expect(check.wrappedCells).toEqual([]);
    expect(check.overflowing).toEqual([]);
    expect(check.chartOverlaps).toEqual([]);
    // Every chart has a legend, and no part of an item touches another's.
    expect(check.legendItems).toEqual(check.chartPaths.map(() => expect.any(Number)));
    for (const items of check.legendItems) expect(items).toBeGreaterThanOrEqual(3);
    expect(check.legendOverlaps).toEqual([]);
    expect(check.cutIds).toEqual([]);
    // The declines say where a rank came from, and the unanswered reviews are listed.
    expect(html).toContain('<th class="num" title="the observation before the latest">before</th>');
    expect(html).toContain('<h3 class="more">Reviews without a response</h3>');
    expect(existsSync(join(dir, 'report.png'))).toBe(true);
    // Every chart text at 10 px or more as drawn, inside its chart; nothing cut that fits.
    expectReadable(check.reading, 11);
  });

  it('`report --business ID --days 7` charts every keyword of one business', async () => {
    const out = join(dir, 'one.html');
    const ran = await runCli(
      ['report', '--out', out, '--business', String(businessId), '--days', '7'],
      target.env,
    );
    expect(ran.code, ran.stderr).toBe(0);
    const weekBefore = new Date(Date.parse(`${lastDay}T00:00:00Z`) - 6 * 86_400_000)
      .toISOString()
      .slice(0, 10);
    expect(ran.stdout).toContain(`(${weekBefore} to ${lastDay}) written to ${out}`);
    expect(lastDay).toBe('2026-06-30');
    const html = await readFile(out, 'utf8');
    expect(html).toContain(`(#${businessId})`);
    const check = await openReport(browser, out);
    expect(check.consoleErrors).toEqual([]);
    expect(check.chartPaths.length).toBeGreaterThan(4);
    for (const paths of check.chartPaths) expect(paths).toBeGreaterThan(10);
  });

  it("at a phone's 480 px the legends wrap and still no item touches another, and no id is cut", async () => {
    const check = await openReport(browser, report, undefined, NARROW);
    expect(check.consoleErrors).toEqual([]);
    expect(check.legendItems.length).toBe(11);
    for (const items of check.legendItems) expect(items).toBeGreaterThanOrEqual(3);
    expect(check.legendOverlaps).toEqual([]);
    // Every id whole, the movers' among them (a # and 5 or more digits, measured against
    // every box that clips), and no table scrolls sideways: on a phone each row of a
    // wide table is a block of "label value" lines, every column on screen.
    expect(check.cutIds).toEqual([]);
    expect(check.moversIds).toBeGreaterThan(0);
    expect(check.scrollsSideways).toEqual([]);
    // The page scrolls down, not sideways.
    expect(check.overflowing.filter((o) => o.startsWith('page'))).toEqual([]);
    // Each chart drawn for the phone's width: its axis text at 10 px or more, none of it
    // outside the chart; no column label or name cut where its line has room.
    expectReadable(check.reading, 11);
  });

  it('five sites with the longest names, and a visibility chart of ten: every legend item clear of the others at 1200 and 480 px', async () => {
    const sites = [
      'Google_new.local',
      'Google_new.organic',
      'Bing_maps.local',
      'Yahoo_local.organic',
      'Apple_maps.local',
    ];
    const chart = rankChart(
      {
        keyword: 'emergency plumber near me',
        sitesTracked: 5,
        sites: sites.map((site, i) => ({ site, points: dayPoints(14, i) })),
      },
      dayBefore(END, 13),
      END,
      siteColors(),
    );
    // Visibility: one line per site, every site of the sandbox's answers (docs/upstream.md).
    const allSites = [...sites, 'Google Maps', 'Google', 'Yahoo Local', 'Yellowpages', 'Bing'];
    const visibility = visibilityChart(
      allSites.map((site, i) => ({
        site,
        points: dayPoints(14, i).map((p) => ({ day: p.day, keywords: 4, visibility: p.rank * 3 })),
      })),
      dayBefore(END, 13),
      END,
      siteColors(),
    );
    for (const viewport of [VIEWPORT, NARROW]) {
      const page = await browser.newPage({ viewport });
      try {
        await page.setContent(chartsPage([chart, visibility]));
        const legends = await measureLegends(page);
        expect(legends.items).toEqual([5, allSites.length]);
        expect(legends.overlaps).toEqual([]);
        const legendTexts = await page.$$eval('ul.legend li', (items) =>
          items.map((li) => li.textContent),
        );
        expect(legendTexts).toEqual([...sites, ...allSites].map(siteLabel));
        expect((await measureLayout(page)).chartOverlaps).toEqual([]);
        expectReadable(await measureReading(page), 2);
      } finally {
        await page.close();
      }
    }
  });

  it.each([1, 2, 7, 90])(
    'a %i-day window: each chart labels each day once, and labels fit',
    async (days) => {
      const first = dayBefore(END, days - 1);
      const dates = Array.from({ length: days }, (_, i) => dayBefore(END, days - 1 - i));
      const charts = [
        rankChart(
          {
            keyword: 'plumber',
            sitesTracked: 2,
            sites: [
              { site: 'Google', points: dayPoints(days, 0) },
              { site: 'Bing', points: dayPoints(days, 3) },
            ],
          },
          first,
          END,
          siteColors(),
        ),
        accuracyChart(
          dates.map((day, i) => ({
            day,
            accurate: 80 + (i % 5),
            inaccurate: 10,
            notPresent: 5,
            accuracyScore: (80 + (i % 5)) / (90 + (i % 5)),
          })),
          first,
          END,
        ),
        reviewChart(
          dates.map((day, i) => ({ day, newReviews: 3 + (i % 4), averageRating: 4, responses: 1 })),
          first,
          END,
        ),
        visibilityChart(
          ['Google', 'Bing', 'Yelp'].map((site, s) => ({
            site,
            points: dates.map((day, i) => ({ day, keywords: 5, visibility: 10 + ((i + s) % 7) })),
          })),
          first,
          END,
          siteColors(),
        ),
      ];
      for (const viewport of [VIEWPORT, NARROW]) {
        const page = await browser.newPage({ viewport });
        try {
          await page.setContent(chartsPage(charts));
          const labels = await dayLabels(page);
          expect(labels).toHaveLength(4);
          for (const chart of labels) {
            expect(chart.length).toBeGreaterThanOrEqual(Math.min(days, 3));
            expect(chart.length).toBeLessThanOrEqual(days);
            expect(new Set(chart).size).toBe(chart.length);
            // The window's first day is labelled, as "Mon D".
            expect(chart[0]).toBe(dayText(first));
          }
          expect((await measureLayout(page)).chartOverlaps).toEqual([]);
          expectReadable(await measureReading(page), 4);
        } finally {
          await page.close();
        }
      }
    },
  );

  it.each([1, 2, 7])(
    '`report --days %i`: distinct day labels on every chart, legends clear',
    async (days) => {
      const out = join(dir, `days-${days}.html`);
      const ran = await runCli(['report', '--out', out, '--days', String(days)], {
        ...target.env,
      });
      expect(ran.code, ran.stderr).toBe(0);
      const check = await openReport(browser, out);
      expect(check.consoleErrors).toEqual([]);
      // A charted keyword with no observation in a short window draws no chart.
      expect(check.dayLabels.length).toBe(check.chartPaths.length);
      expect(check.dayLabels.length).toBeGreaterThanOrEqual(6);
      for (const chart of check.dayLabels) {
        expect(chart.length).toBeGreaterThan(0);
        expect(chart.length).toBeLessThanOrEqual(days);
        expect(new Set(chart).size).toBe(chart.length);
      }
      expect(check.legendOverlaps).toEqual([]);
      expect(check.chartOverlaps).toEqual([]);
    },
  );

  it('the scorecard: the lowest health first (from the tables), sorted by a header click, and read without JavaScript', async () => {
    const out = join(dir, 'health.html');
    const ran = await runCli(['report', '--out', out, '--days', '7'], {
      ...target.env,
    });
    expect(ran.code, ran.stderr).toBe(0);
    const asOf = new Date(
      /id="scorecard" data-as-of="([^"]+)"/.exec(await readFile(out, 'utf8'))?.[1] ?? 'missing',
    );
    const expected = await scorecardOrder(target.warehouse, asOf, dayBefore(lastDay, 6), lastDay);
    expect(expected.length).toBeGreaterThan(4);

    const rowIds = (page: Page) =>
      page.$$eval('#scorecard tbody tr', (rows) =>
        rows.map((row) => Number(row.querySelector('.id')?.textContent?.slice(1))),
      );
    const column = (page: Page, index: number) =>
      page.$$eval(
        '#scorecard tbody tr',
        (rows, i) => rows.map((row) => row.querySelectorAll('td')[i]?.getAttribute('data-v') ?? ''),
        index,
      );

    const page = await browser.newPage({ viewport: VIEWPORT });
    try {
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(`file://${out}`);
      expect(await rowIds(page)).toEqual(expected.map((b) => b.businessId));
      // The health column shows what the order is made of, the need column the tie-break.
      const health = (await column(page, 1)).map(Number);
      expect(health).toEqual([...health].sort((a, b) => a - b));
      health.forEach((h, i) => {
        expect(Math.abs(h - (expected[i]?.health ?? Number.NaN))).toBeLessThanOrEqual(0.05 + 1e-9);
      });
      expect((await column(page, 11)).map(Number)).toEqual(expected.map((b) => b.need));

      // "Inaccurate" (listings): most first; ties keep their health order.
      await page.locator('#scorecard th', { hasText: 'Inaccurate' }).click();
      const byInaccurate = [...expected].sort((a, b) => b.inaccurate - a.inaccurate);
      expect(await rowIds(page)).toEqual(byInaccurate.map((b) => b.businessId));
      expect(await rowIds(page)).not.toEqual(expected.map((b) => b.businessId));
      // Again: fewest first.
      await page.locator('#scorecard th', { hasText: 'Inaccurate' }).click();
      const fewest = [...expected].sort((a, b) => a.inaccurate - b.inaccurate);
      expect(await rowIds(page)).toEqual(fewest.map((b) => b.businessId));
      // "business": by name.
      await page.locator('#scorecard th', { hasText: 'business' }).first().click();
      const names = await page.$$eval('#scorecard tbody tr .name', (n) =>
        n.map((e) => e.textContent ?? ''),
      );
      expect(names).toEqual([...names].sort((a, b) => a.localeCompare(b)));
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }

    // Without JavaScript the table reads the same, in health order.
    const context = await browser.newContext({ viewport: VIEWPORT, javaScriptEnabled: false });
    try {
      const still = await context.newPage();
      await still.goto(`file://${out}`);
      expect(await rowIds(still)).toEqual(expected.map((b) => b.businessId));
      await still.locator('#scorecard th', { hasText: 'Inaccurate' }).click();
      expect(await rowIds(still)).toEqual(expected.map((b) => b.businessId));
    } finally {
      await context.close();
    }
  });

  it('`report --business` names a business that does not exist', async () => {
    const ran = await runCli(['report', '--out', join(dir, 'x.html'), '--business', '999'], {
      ...target.env,
    });
    // A usage error: exit 2, the sentence on standard error.
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain('No business with id 999');
  });
});
