/**
 * Every count the report states, read from its text and held to a count made here with
 * SQL straight from the tables (not the report's views or queries), and every set of
 * parts held to its whole: the key figures, the listings that turned Inaccurate against
 * those Inaccurate now, the reviews without a response against those waiting for one, the
 * businesses charted against the header's. Counts read as English ("1 day", never "1
 * days"), and no business id is cut. A demo warehouse of two accounts over nine days, on
 * PGlite, and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, type RawBuilder, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { runDemo } from '../../src/demo.ts';
import { silentLogger } from '../../src/log.ts';
import { counted, pluralOf } from '../../src/report/counted.ts';
import { writeReport } from '../../src/report/write-report.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/connection.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { dropSchema, freshSchemaName, testBackends } from '../helpers/database.ts';
import { pgliteTemplate } from '../helpers/warehouse-template.ts';

const testDatabaseUrl = process.env['TEST_DATABASE_URL']?.trim();
const END = '2026-03-15';
const DAYS = 8;

/** The page as a reader sees it: no tags, no script or style, entities decoded. */
function pageText(html: string): string {
  return html
    .replace(/<(script|style)[^>]*>[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/\s+/g, ' ');
}

const int = (text: string | undefined) => Number((text ?? 'NaN').replace(/,/g, ''));

type Five = [number, number, number, number, number];

/** The numbers a pattern captures from the text (0 for a group it skipped); fails the test when it is not there. */
function read(text: string, pattern: RegExp): Five {
  const match = pattern.exec(text);
  expect(match, String(pattern)).not.toBeNull();
  const numbers = (match as RegExpExecArray)
    .slice(1)
    .map((group) => (group === undefined ? 0 : int(group)));
  return [0, 1, 2, 3, 4].map((i) => numbers[i] ?? 0) as Five;
}

/** "1 accounts", "1 days", "1 more businesses": a count of one with a plural noun ("1.5 years" is fine). */
const ONE_WITH_PLURAL =
  /(?<![\d.,])1 (?:more |new )?(?:accounts|businesses|days|listings|reviews|keywords|sites|times|responses|hours|weeks|months|years|alerts)\b/g;

function dayBefore(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);
}

async function one<T>(db: Kysely<Database>, query: RawBuilder<T>): Promise<T> {
  return (await query.execute(db)).rows[0] as T;
}

describe('counted', () => {
  it('writes one thing in the singular and any other number in the plural', () => {
    expect(counted(1, 'account')).toBe('1 account');
    expect(counted(2, 'account')).toBe('2 accounts');
    expect(counted(0, 'business')).toBe('0 businesses');
    expect(counted(1, 'business')).toBe('1 business');
    expect(counted(1205, 'review')).toBe('1,205 reviews');
    expect(counted(1, 'day')).toBe('1 day');
    expect(pluralOf('query')).toBe('queries');
    expect(counted(3, 'is', 'are')).toBe('3 are');
  });
});

describe.each(testBackends)('the report states counts that are true and add up (%s)', (backend) => {
  let dir = '';
  let schema = '';
  let warehouse: Warehouse;
  let db: Kysely<Database>;
  let text = '';
  let html = '';
  let dayText = '';
  let businessText = '';
  let businessId = 0;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'report-figures-'));
    const common = {
      days: DAYS,
      accounts: 2,
      businessesPerAccount: 4,
      endDate: END,
      reportPath: join(dir, 'demo.html'),
      write: () => {},
    };
    if (backend === 'postgres') {
      schema = freshSchemaName();
      await runDemo(loadConfig({ DATABASE_URL: testDatabaseUrl }), silentLogger(), {
        ...common,
        schema,
      });
      warehouse = await openWarehouse({
        databaseUrl: testDatabaseUrl as string,
        searchPath: schema,
      });
    } else {
      await runDemo(loadConfig({}), silentLogger(), {
        ...common,
        dataDir: join(dir, 'demo'),
        pgliteTemplate: await pgliteTemplate(),
      });
      warehouse = await openWarehouse({ pgliteDataDir: join(dir, 'demo') });
    }
    db = warehouse.db;
    const full = await writeReport(db, { out: join(dir, 'full.html'), days: 90 });
    html = await readFile(full.path, 'utf8');
    text = pageText(html);
    const day = await writeReport(db, { out: join(dir, 'day.html'), days: 1 });
    dayText = pageText(await readFile(day.path, 'utf8'));
    businessId = (
      await one(
        db,
        sql<{ id: number }>`
        select min(business_id)::int as id from businesses where archived_at is null`,
      )
    ).id;
    const single = await writeReport(db, { out: join(dir, 'one.html'), days: 90, businessId });
    businessText = pageText(await readFile(single.path, 'utf8'));
  }, 600_000);

  afterAll(async () => {
    await warehouse?.close();
    if (schema) await dropSchema(schema);
    await rm(dir, { recursive: true, force: true });
  });

  it('says how many accounts, businesses and days, as the tables hold them', async () => {
    const first = dayBefore(END, DAYS);
    const [accounts, businesses, days] = read(
      text,
      new RegExp(
        `(\\d+) accounts?, ([\\d,]+) business(?:es)? · ${first} to ${END} \\((\\d+) days?\\)`,
      ),
    );
    const counts = await one(
      db,
      sql<{ accounts: number; businesses: number }>`
      select (select count(*)::int from accounts) as accounts,
        (select count(*)::int from businesses where archived_at is null) as businesses`,
    );
    expect(accounts).toBe(counts.accounts);
    expect(accounts).toBe(2);
    expect(businesses).toBe(counts.businesses);
    expect(days).toBe(DAYS + 1);
    expect(dayText).toContain(`${END} to ${END} (1 day)`);
  });

  it('the key figures: listings, Inaccurate, turned Inaccurate and reviews waiting, from the tables', async () => {
    const [listings, inaccurate] = read(text, /([\d,]+) listings? \(([\d,]+) Inaccurate\)/);
    const [turned] = read(text, /([\d,]+) listings? turned Inaccurate in the window/);
    const [waiting] = read(text, /([\d,]+) reviews? waiting for a response: none yet/);
    const live = await one(
      db,
      sql<{ listings: number; inaccurate: number }>`
      select count(*)::int as listings, (count(*) filter (where l.status = 'Inaccurate'))::int as inaccurate
      from listings l join businesses b on b.business_id = l.business_id
      where l.removed_at is null and b.archived_at is null`,
    );
    expect(listings).toBe(live.listings);
    expect(inaccurate).toBe(live.inaccurate);
    const alerts = await one(
      db,
      sql<{ listings: number }>`
      select count(distinct (a.business_id, a.listing_id))::int as listings
      from alerts a join businesses b on b.business_id = a.business_id and b.archived_at is null
      where a.kind = 'listing_inaccurate'
        and (a.detected_at at time zone 'UTC')::date >= ${dayBefore(END, DAYS)}::date`,
    );
    expect(turned).toBe(alerts.listings);
    expect(turned).toBeGreaterThan(0);
    const reviews = await one(
      db,
      sql<{ answerable: number }>`
      select (count(*) filter (where r.can_respond))::int as answerable
      from reviews r join businesses b on b.business_id = r.business_id and b.archived_at is null
      where r.category = 'review' and r.removed_at is null and r.response_count = 0
        and r.review_id not in (select review_id from review_responses where removed_at is null)`,
    );
    expect(waiting).toBe(reviews.answerable);
  });

  it('the listings that turned Inaccurate add up, and agree with those Inaccurate now', async () => {
    const [tile] = read(text, /([\d,]+) listings? turned Inaccurate in the window/);
    const [inaccurateNow] = read(text, /listings? \(([\d,]+) Inaccurate\)/);
    const [turned, turns, still, notNow] = read(
      text,
      /([\d,]+) listings? turned Inaccurate in this window(?: \(([\d,]+) times in all[^)]*\))?: ([\d,]+) of them (?:is|are) Inaccurate now and ([\d,]+) (?:is|are) not/,
    );
    const [ofNow, turnedNow, earlier] = read(
      text,
      /Of the ([\d,]+) listings? Inaccurate now, ([\d,]+) turned in this window and ([\d,]+) earlier/,
    );
    const sqlCounts = await one(
      db,
      sql<{ turns: number; still: number }>`
      select count(*)::int as turns,
        count(distinct (a.business_id, a.listing_id)) filter (
          where l.status = 'Inaccurate' and l.removed_at is null)::int as still
      from alerts a
      join businesses b on b.business_id = a.business_id and b.archived_at is null
      left join listings l on l.business_id = a.business_id and l.listing_id = a.listing_id
      where a.kind = 'listing_inaccurate'
        and (a.detected_at at time zone 'UTC')::date >= ${dayBefore(END, DAYS)}::date`,
    );
    expect(turned).toBe(tile);
    expect(still + notNow).toBe(turned);
    expect(still).toBe(sqlCounts.still);
    if (sqlCounts.turns > turned) expect(turns).toBe(sqlCounts.turns);
    expect(ofNow).toBe(inaccurateNow);
    expect(turnedNow).toBe(still);
    expect(turnedNow + earlier).toBe(inaccurateNow);
  });

  it('the reviews without a response: waiting (the key figure) and not answerable make the whole', async () => {
    const [tile] = read(text, /([\d,]+) reviews? waiting for a response: none yet/);
    const [all, waiting, cannot] = read(
      text,
      /([\d,]+) reviews? (?:has|have) no response \(none stored, none counted upstream\)\. ([\d,]+) of them (?:is|are) waiting for a response.*?The API cannot answer the other ([\d,]+)/,
    );
    const counts = await one(
      db,
      sql<{ all: number }>`
      select count(*)::int as all
      from reviews r join businesses b on b.business_id = r.business_id and b.archived_at is null
      where r.category = 'review' and r.removed_at is null and r.response_count = 0
        and r.review_id not in (select review_id from review_responses where removed_at is null)`,
    );
    expect(all).toBe(counts.all);
    expect(waiting).toBe(tile);
    expect(waiting + cannot).toBe(all);
    expect(cannot).toBeGreaterThan(0);
  });

  it('the businesses charted and those in the table add up to the header', async () => {
    const [businesses] = read(text, /accounts?, ([\d,]+) business(?:es)? ·/);
    const [charted, total, others, withRanks, without] = read(
      text,
      /([\d,]+) of the ([\d,]+) business(?:es)? (?:is|are) charted: .*? The other ([\d,]+) (?:is|are) in that table(?:: ([\d,]+) with rankings, ([\d,]+) without)?/,
    );
    expect(total).toBe(businesses);
    // Each charted business is a heading with its id over its charts.
    const headings = html.match(/<h3>[^<]* <span class="note">#\d+/g) ?? [];
    expect(charted).toBe(headings.length);
    expect(charted).toBe(4);
    expect(charted + others).toBe(total);
    const ranked = await one(
      db,
      sql<{ n: number }>`
      select count(distinct s.business_id)::int as n
      from rank_history h join rank_series s on s.series_id = h.series_id
      join businesses b on b.business_id = s.business_id and b.archived_at is null
      where h.observed_on >= ${dayBefore(END, DAYS)}::date`,
    );
    if (withRanks || without) {
      expect(withRanks + without).toBe(others);
      expect(withRanks + charted).toBe(ranked.n);
    } else expect(ranked.n).toBe(total);
  });

  it('the Businesses table: a row per business, its columns summing to the key figures', () => {
    const [businesses] = read(text, /accounts?, ([\d,]+) business(?:es)? ·/);
    const [inaccurate] = read(text, /listings? \(([\d,]+) Inaccurate\)/);
    const [waiting] = read(text, /([\d,]+) reviews? waiting for a response: none yet/);
    const table =
      /<table class="sortable" id="businesses">([\s\S]*?)<\/table>/.exec(html)?.[1] ?? '';
    const rows = [...table.matchAll(/<tr data-need[^>]*>([\s\S]*?)<\/tr>/g)].map((row) =>
      [...(row[1] ?? '').matchAll(/data-v="([^"]*)"/g)].map((v) => v[1] ?? ''),
    );
    expect(rows).toHaveLength(businesses);
    // Columns: business, need, Inaccurate, accuracy, waiting, rating, up, down.
    const sum = (i: number) => rows.reduce((total, row) => total + Number(row[i]), 0);
    expect(sum(2)).toBe(inaccurate);
    expect(sum(4)).toBe(waiting);
    for (const row of rows) {
      expect(Number(row[1])).toBe(Number(row[2]) + Number(row[4]) + Number(row[7]));
    }
  });

  it('reads as English: no "1 accounts" or "1 days", in any scope; no id is cut', async () => {
    for (const page of [text, dayText, businessText]) {
      expect(page.match(ONE_WITH_PLURAL)).toBeNull();
      expect(page).not.toMatch(/\(s\)/);
      expect(page).not.toMatch(/#\d+…/);
    }
    const ids = new Set(
      (
        await sql<{ id: number }>`select business_id::int as id from businesses`.execute(db)
      ).rows.map((r) => r.id),
    );
    // Every business id printed is whole: one the warehouse knows.
    const printed = [...text.matchAll(/#(\d{5,})/g)].map((m) => Number(m[1]));
    expect(printed.length).toBeGreaterThan(0);
    for (const id of printed) expect(ids.has(id), `#${id}`).toBe(true);
    expect(businessText).toContain(`(#${businessId})`);
  });
});
