/**
 * The report as an analyst reads it, on the demo's data (9 simulated days, so 7-day
 * changes exist): the biggest losses lead, site names read as words, the accuracy axis
 * fits the data, every charted rank point has a hover title, and durations read well.
 * Expected values are computed here from the warehouse's views, independently of the
 * report's own queries. PGlite, and PostgreSQL when TEST_DATABASE_URL is set.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accuracyAxisRange } from '../../src/report/charts.ts';
import type { ReportData } from '../../src/report/report-data.ts';
import { hoursText } from '../../src/report/report-html.ts';
import { siteLabel } from '../../src/report/site-names.ts';
import { writeReport } from '../../src/report/write-report.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { testBackends } from '../helpers/database.ts';
import { type SimulatedDemo, simulatedDemo } from '../helpers/demo-world.ts';

const _testDatabaseUrl = process.env['TEST_DATABASE_URL']?.trim();

describe('report wording', () => {
  it('names sites as words', () => {
    expect(siteLabel('Google_new.local')).toBe('Google (new) local pack');
    expect(siteLabel('Google_new.organic')).toBe('Google (new) organic');
    expect(siteLabel('Bing')).toBe('Bing');
    expect(siteLabel('Yahoo_local')).toBe('Yahoo local');
  });

  it('says durations as a person would', () => {
    expect(hoursText(0.5)).toBe('30 min');
    expect(hoursText(5.2)).toBe('5 h');
    expect(hoursText(72)).toBe('3 days');
    expect(hoursText(24 * 30)).toBe('4 weeks');
    expect(hoursText(24 * 200)).toBe('7 months');
    expect(hoursText(909.5 * 24)).toBe('2.5 years');
    expect(hoursText(null)).toBe('–');
  });

  it('scales the accuracy axis to the data, in steps of 5 %', () => {
    const day = (score: number | null) => ({
      day: '2026-01-01',
      accurate: 1,
      inaccurate: 1,
      notPresent: 0,
      accuracyScore: score,
    });
    expect(accuracyAxisRange([day(0.84), day(0.86)])).toEqual({ min: 75, max: 95 });
    expect(accuracyAxisRange([day(0.99)])).toEqual({ min: 90, max: 100 });
    expect(accuracyAxisRange([day(null)])).toEqual({ min: 0, max: 100 });
  });
});

describe.each(testBackends)('the report on the demo (%s)', (backend) => {
  let dir = '';
  let demo: SimulatedDemo | undefined;
  let warehouse: Warehouse;
  let html = '';
  let data: ReportData;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'report-analyst-'));
    demo = await simulatedDemo(backend, {
      days: 9,
      accounts: 1,
      businessesPerAccount: 4,
      endDate: '2026-05-20',
      reportPath: join(dir, 'demo.html'),
    });
    warehouse = demo.warehouse;
    const report = await writeReport(warehouse.db, { out: join(dir, 'report.html'), days: 90 });
    data = report.data;
    html = await readFile(report.path, 'utf8');
  }, 600_000);

  afterAll(async () => {
    await demo?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('leads with the biggest movers, losses first, as the views compute them', async () => {
    expect(html.indexOf('<h2>Biggest movers</h2>')).toBeGreaterThan(0);
    expect(html.indexOf('<h2>Biggest movers</h2>')).toBeLessThan(
      html.indexOf('<h2>Keyword rankings</h2>'),
    );
    const { rows } = await sql<{ loss: number }>`
      select max(greatest(coalesce(rank_change_7d, 0), coalesce(rank_change_30d, 0)))::int as loss
      from v_rank_latest where not coalesce(left_top3, false) and not coalesce(left_top10, false)`.execute(
      warehouse.db,
    );
    const worstLoss = rows[0]?.loss ?? 0;
    expect(worstLoss).toBeGreaterThan(0);
    const first = data.declines.find((d) => !d.leftTop3 && !d.leftTop10);
    expect(Math.max(first?.rankChange7d ?? 0, first?.rankChange30d ?? 0)).toBe(worstLoss);
    // Left-the-top rows come before plain losses; losses are ordered worst first.
    const leftIndex = data.declines.map((d) => d.leftTop3 || d.leftTop10);
    expect(leftIndex).toEqual([...leftIndex].sort((a, b) => Number(b) - Number(a)));
    for (const d of data.declines) {
      expect(
        d.leftTop3 || d.leftTop10 || (d.rankChange7d ?? 0) > 0 || (d.rankChange30d ?? 0) > 0,
      ).toBe(true);
    }
    for (const g of data.gains)
      expect((g.rankChange7d ?? 0) < 0 || (g.rankChange30d ?? 0) < 0).toBe(true);
  });

  it('says where a decline came from: the rank before, and 7 and 30 days ago', async () => {
    const { rows } = await sql<{
      business_id: number;
      keyword: string;
      site: string;
      previous_rank: number | null;
      rank_7d_ago: number | null;
      rank_30d_ago: number | null;
    }>`select business_id, keyword, site, previous_rank, rank_7d_ago, rank_30d_ago
       from v_rank_latest`.execute(warehouse.db);
    const byKey = new Map(rows.map((r) => [`${r.business_id}|${r.keyword}|${r.site}`, r]));
    expect(data.declines.length).toBeGreaterThan(0);
    for (const d of [...data.declines, ...data.gains]) {
      const view = byKey.get(`${d.businessId}|${d.keyword}|${d.site}`);
      expect(d.previousRank).toBe(view?.previous_rank);
      expect(d.rank7dAgo).toBe(view?.rank_7d_ago);
      expect(d.rank30dAgo).toBe(view?.rank_30d_ago);
    }
    // A row that left the top 3 shows the rank it left from.
    const left = data.declines.find((d) => d.leftTop3 && d.previousRank !== null);
    expect(left).toBeDefined();
    expect(left!.previousRank).toBeLessThanOrEqual(3);
    const movers = html.slice(
      html.indexOf('<h2>Biggest movers</h2>'),
      html.indexOf('<h2>Keyword rankings</h2>'),
    );
    // Each cell carries its column's header, for the phone's layout (report.test.ts).
    expect(movers).toContain(`<td data-label="before" class="num">#${left!.previousRank}</td>`);
    if (left!.rank7dAgo !== null && left!.rankChange7d !== null) {
      expect(movers).toContain(`#${left!.rank7dAgo}, <span`);
    }
  });

  it('lists the reviews waiting for an answer as the docs/warehouse.md query does', async () => {
    const doc = await readFile(join(import.meta.dirname, '../../docs/warehouse.md'), 'utf8');
    const query = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)]
      .map((m) => m[1] ?? '')
      .find((q) => q.includes('not exists (select 1 from review_responses'));
    expect(query, 'the "Reviews waiting for an answer" query').toBeDefined();
    const all = (
      await sql
        .raw<{ review_id: string; can_respond: boolean; first_words: string }>(
          query!.trim().replace(/;\s*$/, ''),
        )
        .execute(warehouse.db)
    ).rows;
    expect(all.length).toBeGreaterThan(data.awaiting.length);
    expect(data.awaitingTotal).toBe(all.length);
    expect(data.awaitingAnswerable).toBe(all.filter((r) => r.can_respond).length);
    // The card's count is the answerable part of the same list.
    expect(data.kpis.unansweredAnswerable).toBe(data.awaitingAnswerable);
    expect(data.awaiting.map((r) => r.reviewId)).toEqual(
      all.slice(0, data.awaiting.length).map((r) => r.review_id),
    );
    expect(data.awaiting.map((r) => r.excerpt)).toEqual(
      all.slice(0, data.awaiting.length).map((r) => r.first_words),
    );
    // Oldest first, and within a day the lowest rating first.
    for (let i = 1; i < data.awaiting.length; i++) {
      const a = data.awaiting[i - 1]!;
      const b = data.awaiting[i]!;
      const dayA = a.reviewedAt?.toISOString().slice(0, 10) ?? '9999';
      const dayB = b.reviewedAt?.toISOString().slice(0, 10) ?? '9999';
      expect(dayA <= dayB).toBe(true);
      if (dayA === dayB) expect((a.rating ?? 99) <= (b.rating ?? 99)).toBe(true);
    }
    const section = html.slice(html.indexOf('Reviews without a response'));
    const first = data.awaiting[0]!;
    expect(section).toContain(`title="${first.permalink}"`);
    expect(section).toContain(first.canRespond ? '>yes</td>' : '>no</td>');
    expect(section).toContain(
      `${data.awaitingTotal.toLocaleString('en-US')} reviews have no response`,
    );
  });

  it('charts a losing keyword of each business before its best ones', async () => {
    for (const business of data.ranks) {
      const { rows } = await sql<{ keyword: string; loss: number }>`
        select keyword, max(greatest(coalesce(rank_change_7d, 0), coalesce(rank_change_30d, 0))
          + case when left_top3 or left_top10 then 1000 else 0 end)::int as loss
        from v_rank_latest where business_id = ${business.businessId}
        group by keyword order by 2 desc, 1 limit 1`.execute(warehouse.db);
      const worst = rows[0];
      if (worst && worst.loss > 0) expect(business.keywords[0]?.keyword).toBe(worst.keyword);
    }
  });

  it('shows friendly site names and never the raw value in legends or tables', () => {
    const raw = [
      ...new Set(data.ranks.flatMap((b) => b.keywords.flatMap((k) => k.sites.map((s) => s.site)))),
    ];
    expect(raw.length).toBeGreaterThan(0);
    for (const site of raw.filter((s) => s !== siteLabel(s))) {
      expect(html).not.toContain(`>${site}<`);
      expect(html).toContain(siteLabel(site));
    }
  });

  it('gives every charted rank point a hover title', () => {
    const points = data.ranks.flatMap((b) =>
      b.keywords.flatMap((k) =>
        k.sites.flatMap((s) => s.points.filter((p) => p.rank !== null).map((p) => ({ k, s, p }))),
      ),
    );
    expect(points.length).toBeGreaterThan(0);
    for (const { k, s, p } of points.slice(0, 20)) {
      expect(html).toContain(
        `<title>${k.keyword} · ${siteLabel(s.site)} · ${p.day}: rank ${p.rank}</title>`.replace(
          /&/g,
          '&#38;',
        ),
      );
    }
    const titles = html.match(/<title>[^<]*: rank \d+<\/title>/g) ?? [];
    expect(titles).toHaveLength(points.length);
  });

  it('scales the accuracy axis to the data', () => {
    const range = accuracyAxisRange(data.accuracy);
    expect(range.min).toBeGreaterThan(0);
    const section = html.slice(
      html.indexOf('<h2>Listing accuracy</h2>'),
      html.indexOf('<h2>Newly Inaccurate'),
    );
    expect(section).toContain(`>${range.max}%<`);
    expect(section).toContain(`>${range.min}%<`);
    expect(section).not.toContain('>0%<');
  });

  it('measures how long a review has waited at the end of the window, not at the wall clock', () => {
    const oldest = Math.max(...data.sla.map((s) => s.oldestUnansweredAgeHours ?? 0));
    // The demo's reviews go back at most 900 days before its first day.
    expect(oldest).toBeGreaterThan(0);
    expect(oldest).toBeLessThanOrEqual((900 + 9 + 1) * 24);
  });
});
