/**
 * Migration 0032 and the raw zone's deltas (docs/warehouse.md, "Raw zone"): a new body is
 * kept as zstd against the base of the previous body of its request, reads back as it came
 * (`raw show`'s and replay's decoding), retention never deletes a base a delta needs, and
 * the migration's `down()` gives every body back whole and `params` back from `request`,
 * in batches, on both backends.
 */
import { createHash } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { renderRawShow } from '../../src/cli/commands/raw-show.ts';
import {
  BODY_ENCODING,
  compressBody,
  compressDelta,
  DELTA_ENCODING,
  decompressBody,
} from '../../src/raw/body.ts';
import { type KeptRead, writeRawReads } from '../../src/raw/capture.ts';
import { keptBodyTexts } from '../../src/raw/inspect.ts';
import { deleteUnreadBodies } from '../../src/raw/prune.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { migrateTo, migrateToLatest } from '../../src/warehouse/driver/migrate.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';

const BEFORE = '0031_read_models_without_fk_checks';
const RUN = '00000000-0000-4000-8000-000000000001';
const NIGHT = new Date('2026-05-04T03:00:00.000Z');

/** A reviews body of `n` reviews, the `changed` one's text changed by `edit`. */
function reviewsBody(n: number, changed = -1, edit = ''): string {
  return JSON.stringify({
    reviews: Array.from({ length: n }, (_, i) => ({
      review_id: 5000 + i,
      author: `Author ${i}`,
      text: `Review ${i}: the staff was friendly, ${(i * 7919) % 1000} stars of service${i === changed ? edit : ''}`,
      rating: 1 + (i % 5),
    })),
  });
}

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

function read(businessId: number, text: string, observedAt: Date): KeptRead {
  return {
    accountName: 'east',
    businessId,
    operation: 'list_reviews',
    request: `/businesses/${businessId}/reviews.json?category=all`,
    attempt: 1,
    status: 200,
    text,
    hash: sha(text),
    observedAt,
  };
}

const dayAfter = (d: Date, n: number) => new Date(d.getTime() + n * 86_400_000);

/** The account's read of its countries: a read tied to no business. */
function accountRead(text: string, observedAt: Date): KeptRead {
  return {
    ...read(1, text, observedAt),
    businessId: null,
    operation: 'list_countries',
    request: '/countries.json',
  };
}

/** A business's keywords read, its body its own. */
function keywordsRead(businessId: number, observedAt: Date): KeptRead {
  const text = JSON.stringify({ keywords: [{ keyword_id: businessId, keyword: 'bakery' }] });
  return {
    ...read(businessId, text, observedAt),
    operation: 'list_keywords',
    request: `/businesses/${businessId}/keywords.json`,
  };
}

/** The kept bodies, hashes in hex as the program names them (stored as bytes since 0035). */
async function bodies(db: Kysely<Database>) {
  return db
    .selectFrom('raw_bodies')
    .select([
      sql<string>`encode(body_hash, 'hex')`.as('body_hash'),
      'encoding',
      sql<string | null>`encode(base_hash, 'hex')`.as('base_hash'),
      'size',
    ])
    .orderBy('raw_bodies.body_hash')
    .execute();
}

describe.each(testBackends)('raw zone deltas (%s)', (backend) => {
  let wh: TestWarehouse | undefined;
  afterEach(async () => {
    await wh?.close();
    wh = undefined;
  });

  it('keeps a changed body as a delta on its base, reads it back, and prunes bases last', async () => {
    wh = await createTestWarehouse(backend);
    const db = wh.db;
    const night1 = reviewsBody(120);
    const night2 = reviewsBody(120, 7, ' (edited)');
    const night3 = reviewsBody(121, 90, ' and more');
    await writeRawReads(db, { runId: RUN }, [read(1, night1, NIGHT)]);
    await writeRawReads(db, { runId: RUN }, [read(1, night2, dayAfter(NIGHT, 1))]);
    await writeRawReads(db, { runId: RUN }, [read(1, night3, dayAfter(NIGHT, 2))]);
    // Another business's first body has no previous read: kept whole.
    await writeRawReads(db, { runId: RUN }, [read(2, night2, dayAfter(NIGHT, 2))]);

    const kept = new Map((await bodies(db)).map((b) => [b.body_hash, b]));
    expect(kept.get(sha(night1))).toMatchObject({ encoding: BODY_ENCODING, base_hash: null });
    // Both later nights name the first as base (a base is never a delta).
    expect(kept.get(sha(night2))).toMatchObject({
      encoding: DELTA_ENCODING,
      base_hash: sha(night1),
      size: Buffer.byteLength(night2),
    });
    expect(kept.get(sha(night3))).toMatchObject({
      encoding: DELTA_ENCODING,
      base_hash: sha(night1),
    });
    expect(kept.size).toBe(3);
    const texts = new Map((await keptBodyTexts(db)).map((b) => [b.body_hash, b.text]));
    expect(texts.get(sha(night2))).toBe(night2);
    expect(texts.get(sha(night3))).toBe(night3);
    // `raw show` prints a delta's night byte for byte.
    expect(await renderRawShow(db, { businessId: 1, date: '2026-05-05', raw: true })).toEqual({
      text: `${night2}\n`,
      unreadable: [],
    });

    // Only night 3's read left: its base stays though no read names it.
    await sql`delete from raw_read_sets where observed_at < ${dayAfter(NIGHT, 2)}`.execute(db);
    await sql`delete from raw_read_sets where business_id = 2`.execute(db);
    expect(await deleteUnreadBodies(db)).toBe(1);
    expect((await bodies(db)).map((b) => b.body_hash).sort()).toEqual(
      [sha(night1), sha(night3)].sort(),
    );
    // No read at all: the delta goes, then its base, in one pruning.
    await sql`delete from raw_read_sets`.execute(db);
    expect(await deleteUnreadBodies(db)).toBe(2);
    expect(await bodies(db)).toEqual([]);
  });

  it("looks for a base only in the same business's reads of the last nights, or the account's own", async () => {
    wh = await createTestWarehouse(backend);
    const db = wh.db;
    const first = reviewsBody(80);
    const tenDaysOn = reviewsBody(80, 3, ' (ten days on)');
    const sameNight = reviewsBody(80, 5, ' (another business)');
    const countries = reviewsBody(60);
    const countriesNext = reviewsBody(60, 1, ' (renamed)');
    await writeRawReads(db, { runId: RUN }, [read(1, first, NIGHT), accountRead(countries, NIGHT)]);
    // Each business below has a read of its own in the window (its keywords), so the look-up
    // of a base runs, and its own conditions decide.
    await writeRawReads(db, { runId: RUN }, [keywordsRead(1, dayAfter(NIGHT, 9))]);
    await writeRawReads(db, { runId: RUN }, [keywordsRead(4, NIGHT)]);
    // Business 1's only earlier reviews are ten nights old, past the window: kept whole.
    await writeRawReads(db, { runId: RUN }, [read(1, tenDaysOn, dayAfter(NIGHT, 10))]);
    // Business 4 never read its reviews, though business 1 read theirs: kept whole.
    await writeRawReads(db, { runId: RUN }, [read(4, sameNight, dayAfter(NIGHT, 1))]);
    // The account's read tied to no business finds the account's own of the night before.
    await writeRawReads(db, { runId: RUN }, [accountRead(countriesNext, dayAfter(NIGHT, 1))]);
    // A body kept already is neither compressed nor inserted again.
    await writeRawReads(db, { runId: RUN }, [read(1, first, dayAfter(NIGHT, 1))]);

    const kept = new Map((await bodies(db)).map((b) => [b.body_hash, b]));
    expect(kept.size).toBe(7);
    for (const whole of [first, tenDaysOn, sameNight, countries]) {
      expect(kept.get(sha(whole))).toMatchObject({ encoding: BODY_ENCODING, base_hash: null });
    }
    expect(kept.get(sha(countriesNext))).toMatchObject({
      encoding: DELTA_ENCODING,
      base_hash: sha(countries),
    });
    const texts = new Map((await keptBodyTexts(db)).map((b) => [b.body_hash, b.text]));
    expect(texts.get(sha(countriesNext))).toBe(countriesNext);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from raw_reads`.execute(db);
    expect(rows[0]?.n).toBe(8);
  });

  it('gives each new body the base of its own request when a body kept already comes before it', async () => {
    wh = await createTestWarehouse(backend);
    const db = wh.db;
    const keywords = keywordsRead(1, NIGHT);
    const base = reviewsBody(80);
    // A changed reviews body whose hash sorts after the keywords': the batch goes in hash
    // order, so the new body is second, after one kept already.
    let changed = '';
    for (let edit = 0; changed === '' || sha(changed) < keywords.hash; edit++) {
      changed = reviewsBody(80, 3, ` (edit ${edit})`);
    }
    await writeRawReads(db, { runId: RUN }, [read(1, base, NIGHT), keywords]);
    await writeRawReads(db, { runId: RUN }, [
      read(1, changed, dayAfter(NIGHT, 1)),
      { ...keywords, observedAt: dayAfter(NIGHT, 1) },
    ]);
    const kept = new Map((await bodies(db)).map((b) => [b.body_hash, b]));
    expect(kept.get(sha(changed))).toMatchObject({
      encoding: DELTA_ENCODING,
      base_hash: sha(base),
    });
    expect(kept.size).toBe(3);
  });

  it('keeps a body whole when its delta would not be small', async () => {
    wh = await createTestWarehouse(backend);
    const db = wh.db;
    await writeRawReads(db, { runId: RUN }, [read(1, reviewsBody(40), NIGHT)]);
    // Nothing in common with the base, and not compressible: the delta is the whole body.
    const noise = Array.from({ length: 40 }, (_, i) => sha(`noise ${i}`)).join('');
    const other = JSON.stringify({ reviews: [], note: noise });
    await writeRawReads(db, { runId: RUN }, [read(1, other, dayAfter(NIGHT, 1))]);
    const kept = (await bodies(db)).find((b) => b.body_hash === sha(other));
    expect(kept).toMatchObject({ encoding: BODY_ENCODING, base_hash: null });
  });

  it('migration 0032 drops params and its down() keeps every body whole again, in batches', {
    timeout: 300_000,
  }, async () => {
    wh = await createTestWarehouse(backend, { migrate: false });
    // biome-ignore lint/suspicious/noExplicitAny: the old schema has no Database type here
    const old = wh.db as unknown as Kysely<any>;
    await migrateTo(wh.db, BEFORE);
    const base = reviewsBody(60);
    await old
      .insertInto('raw_bodies')
      .values({
        body_hash: sha(base),
        encoding: BODY_ENCODING,
        size: base.length,
        bytes: compressBody(base),
      })
      .execute();
    // More reads than one batch (500), each with its params as 0031 kept them.
    const reads = Array.from({ length: 520 }, (_, i) => ({
      run_id: RUN,
      account_name: 'east',
      business_id: i,
      operation: 'list_reviews',
      request: `/businesses/${i}/reviews.json?category=a%26b&page=${i % 3}`,
      params: JSON.stringify({ category: 'a&b', page: String(i % 3) }),
      attempt: 1,
      status: 200,
      observed_at: NIGHT,
      body_hash: sha(base),
    }));
    await old.insertInto('raw_reads').values(reads).execute();
    const paramsBefore = await sql`select read_id, params from raw_reads order by read_id`.execute(
      old,
    );

    await migrateToLatest(wh.db);
    const columns = await sql<{ column_name: string }>`
      select column_name from information_schema.columns
       where table_schema = current_schema() and table_name = 'raw_reads'`.execute(old);
    expect(columns.rows.map((c) => c.column_name)).not.toContain('params');
    // The bodies kept before stay as they were, and read as before.
    expect(await keptBodyTexts(wh.db)).toEqual([{ body_hash: sha(base), text: base }]);

    // More deltas than one batch, on that base.
    const variants = Array.from({ length: 510 }, (_, i) => reviewsBody(60, i % 60, ` v${i}`));
    await old
      .insertInto('raw_bodies')
      .values(
        // The hashes as 0035 keeps them: 32 bytes.
        variants.map((text) => ({
          body_hash: Buffer.from(sha(text), 'hex'),
          encoding: DELTA_ENCODING,
          size: text.length,
          bytes: compressDelta(text, base),
          base_hash: Buffer.from(sha(base), 'hex'),
        })),
      )
      .execute();

    await migrateTo(wh.db, BEFORE);
    const after = await sql<{ body_hash: string; encoding: string; bytes: Uint8Array }>`
      select body_hash, encoding, bytes from raw_bodies`.execute(old);
    expect(after.rows).toHaveLength(511);
    expect(new Set(after.rows.map((r) => r.encoding))).toEqual(new Set([BODY_ENCODING]));
    const texts = new Map(
      after.rows.map((r) => [r.body_hash, decompressBody(r.encoding, r.bytes)] as const),
    );
    for (const text of [base, ...variants]) expect(texts.get(sha(text))).toBe(text);
    const baseColumn = await sql<{ column_name: string }>`
      select column_name from information_schema.columns
       where table_schema = current_schema() and table_name = 'raw_bodies'
         and column_name = 'base_hash'`.execute(old);
    expect(baseColumn.rows).toEqual([]);
    const paramsAfter = await sql`select read_id, params from raw_reads order by read_id`.execute(
      old,
    );
    expect(paramsAfter.rows).toEqual(paramsBefore.rows);
  });
});
