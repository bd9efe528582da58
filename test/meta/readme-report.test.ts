/**
 * README's description of the report, held to what the demo draws: the report's sections
 * (its headings), in the order README names them, each named there; a section added to
 * the report and not to README fails here. The movers' and the waiting reviews' columns
 * are the ones README lists.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeReport } from '../../src/report/write-report.ts';
import { sharedDemoWorld } from '../helpers/demo-world.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** Each section the report draws (its heading), and the words README describes it with. */
const SECTIONS: [heading: string, readme: string][] = [
  ['Top and bottom five by health', 'the top five and bottom five businesses by health'],
  ['Top five', 'the five healthiest'],
  ['Bottom five', 'the five least healthy'],
  ['Scorecard', 'the scorecard, one row per business, the least healthy first'],
  ['Visibility per site', 'visibility per site over time'],
  ['Biggest movers', 'the biggest movers'],
  ['Declines', 'keywords that left the top 3 or top 10 and the worst 7- and 30-day rank losses'],
  ['Gains', 'then the best gains'],
  ['Keyword rankings', 'rank trends per keyword and site'],
  ['Listing accuracy', 'listing accuracy over time'],
  ['Newly Inaccurate listings', 'the listings that newly turned Inaccurate'],
  ['Reviews', 'review volume, rating and responses'],
  ['Awaiting a response', 'the businesses with reviews awaiting a response'],
  ['Reviews without a response', 'the reviews without a response themselves'],
];

/** README's paragraph on `report.html`, whitespace folded. */
function readmeReport(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('`report.html` is one self-contained file');
  const end = readme.indexOf('\n\n', start);
  expect(start).toBeGreaterThan(0);
  return readme.slice(start, end).replace(/\s+/g, ' ');
}

/** The header cells of the first table after `heading`. */
function columnsAfter(html: string, heading: string): string[] {
  const at = html.indexOf(`>${heading}</h3>`);
  const head = /<thead>([\s\S]*?)<\/thead>/.exec(html.slice(at))?.[1] ?? '';
  return [...head.matchAll(/<th[^>]*>([^<]*)<\/th>/g)].map((m) => m[1] ?? '').filter(Boolean);
}

describe("README's description of the report", () => {
  let dir: string;
  let html: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'readme-report-'));
    // The report the demo writes, drawn again from the run's shared demo world.
    const { warehouse } = await sharedDemoWorld();
    const report = await writeReport(warehouse.db, { out: join(dir, 'report.html'), days: 90 });
    html = await readFile(report.path, 'utf8');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('names every section the report draws, in the order it draws them', () => {
    // Headings but a business's own (`<h3>Name <span class="note">#id…`) under the rankings.
    const headings = [...html.matchAll(/<h([23])[^>]*>([^<]*)(<span class="note">#)?/g)]
      .filter((m) => !m[3])
      .map((m) => (m[2] ?? '').trim());
    expect(headings).toEqual(SECTIONS.map(([heading]) => heading));
    expect(html).toContain('class="kpis"');

    const text = readmeReport();
    expect(text).toContain('Under the key figures');
    let from = 0;
    for (const [heading, words] of SECTIONS) {
      const at = text.indexOf(words, from);
      expect({ heading, words, found: at >= 0 }).toEqual({ heading, words, found: true });
      from = at + words.length;
    }
  });

  it("lists the columns README names: the movers' ranks, the waiting reviews' fields", () => {
    const text = readmeReport();
    expect(text).toContain('its rank now, the rank before it, and the rank 7 and 30 days ago');
    expect(columnsAfter(html, 'Declines')).toEqual(
      expect.arrayContaining(['rank now', 'before', '7 days ago', '30 days ago']),
    );
    expect(text).toContain(
      'with site, rating, date, first words, permalink and whether the API can answer them',
    );
    expect(columnsAfter(html, 'Reviews without a response')).toEqual(
      expect.arrayContaining(['site', 'rating', 'reviewed', 'text', 'link', 'API']),
    );
  });
});
