/**
 * The raw zone end to end (docs/warehouse.md, "Raw zone"; docs/replay.md):
 * sandbox nights over real HTTP keep every read, content-addressed and without secrets,
 * and a replay of those nights into another schema of the same database gives every
 * documented table and view the live nights built.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { type Kysely, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { archiveBusiness, listBusinesses } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { keptBodyTexts } from '../../src/raw/inspect.ts';
import { ReplayCoverageError, replay } from '../../src/replay/replay.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { testBackends } from '../helpers/database.ts';
import { nightOf, sync, type WorldShape, worldPerTest, worldTruth } from '../sync/harness.ts';
import { documentedContent, inSchema } from './documented-content.ts';

const execFileAsync = promisify(execFile);

const WORLD: WorldShape = {
  seed: 23,
  accounts: 2,
  businessesPerAccount: 4,
  startDate: '2026-03-01',
};

async function rowCount(db: Kysely<Database>, table: 'raw_reads' | 'raw_bodies'): Promise<number> {
  const { rows } = await sql<{
    n: number;
  }>`select count(*)::int as n from ${sql.table(table)}`.execute(db);
  return rows[0]?.n ?? 0;
}

/**
 * Every row of every table of every schema of the database as text, every raw zone's
 * bodies decompressed: on PGlite, where pg_dump cannot reach, the same ground pg_dump's
 * data covers (and more: the bodies as received, not as compressed bytes).
 */
async function everythingStored(db: Kysely<Database>): Promise<string> {
  const { rows: tables } = await sql<{ table_schema: string; table_name: string }>`
    select table_schema, table_name from information_schema.tables
    where table_type = 'BASE TABLE'
      and table_schema not in ('pg_catalog', 'information_schema')
    order by 1, 2`.execute(db);
  expect(tables.some((t) => t.table_name === 'raw_read_sets')).toBe(true);
  const parts: string[] = [];
  for (const { table_schema, table_name } of tables) {
    const { rows } = await sql<{ row: string }>`
      select t::text as row from ${sql.id(table_schema, table_name)} t`.execute(db);
    parts.push(...rows.map((r) => r.row));
    if (table_name === 'raw_bodies') {
      const kept = await keptBodyTexts(db.withSchema(table_schema));
      for (const body of kept) parts.push(body.text);
    }
  }
  return parts.join('\n');
}

/** The raw zone alone as text: its reads' rows and its bodies as received. */
async function rawZoneText(db: Kysely<Database>): Promise<string> {
  const { rows } = await sql<{ row: string }>`select t::text as row from raw_reads t`.execute(db);
  const bodies = await keptBodyTexts(db);
  return [...rows.map((r) => r.row), ...bodies.map((b) => b.text)].join('\n');
}

describe.each(testBackends)('raw zone (%s)', (backend) => {
  const world = worldPerTest(backend, WORLD);

  it('keeps every read of a night once per body, with its run, business and time, and no secret', async () => {
    const night = nightOf(world.sandbox);
    const result = await sync(world.warehouse, world.api, world.sandbox.credentials, {
      now: () => night,
    });
    expect(result.status).toBe('succeeded');
    const db = world.warehouse.db;
    const reads = await db.selectFrom('raw_reads').selectAll().execute();
    // Every answer the sync received: each request sent, less any whose socket failed
    // before an answer came (undici may meet a keep-alive socket the server just closed;
    // the client retries those).
    expect(reads.length).toBeLessThanOrEqual(result.stats.requests);
    expect(reads.length).toBeGreaterThanOrEqual(result.stats.requests - result.stats.retries);
    expect(reads.length).toBeGreaterThanOrEqual(
      1 + 3 + WORLD.accounts * (1 + WORLD.businessesPerAccount * 6),
    );
    expect(new Set(reads.map((r) => r.run_id))).toEqual(new Set([result.runId]));
    expect(reads.every((r) => new Date(r.observed_at).getTime() === night.getTime())).toBe(true);
    const operations = new Set(reads.map((r) => r.operation));
    for (const op of [
      'list_businesses',
      'get_business_full',
      'list_listings',
      'list_reviews',
      'get_rankings',
      'list_keywords',
      'list_countries',
      'list_states',
      'list_sub_categories',
    ]) {
      expect(operations, op).toContain(op);
    }
    const listingRead = reads.find((r) => r.operation === 'list_listings');
    expect(listingRead?.business_id).toBeTypeOf('number');
    expect(listingRead?.request).toBe(`/businesses/${listingRead?.business_id}/listings.json`);
    expect(reads.find((r) => r.operation === 'list_businesses')?.business_id).toBeNull();
    const reviewRead = reads.find((r) => r.operation === 'list_reviews');
    expect(reviewRead?.request).toMatch(/[?&]category=/);
    expect(JSON.stringify(reads.map((r) => r.request))).not.toMatch(/auth_token|user_email/);

    // A body is stored once: the same day again adds read rows and no body.
    const bodies = await rowCount(db, 'raw_bodies');
    const again = await sync(world.warehouse, world.api, world.sandbox.credentials, {
      now: () => night,
    });
    expect(again.status).toBe('succeeded');
    expect(await rowCount(db, 'raw_reads')).toBe(2 * reads.length);
    expect(await rowCount(db, 'raw_bodies')).toBe(bodies);

    // No token, no email parameter, no directory password anywhere in the warehouse: the
    // sandbox's own credentials and every password its directories hold.
    const stored = await everythingStored(db);
    const passwords = [...worldTruth(WORLD, 0).listings.values()]
      .map((l) => l['site_password'])
      .filter((p): p is string => typeof p === 'string' && p !== '');
    expect(passwords.length).toBeGreaterThan(0);
    expect(world.sandbox.credentials.length).toBe(WORLD.accounts);
    // What the sync sent: the token and e-mail in the query string, as a URL carries them.
    const secretParams = world.sandbox.credentials.flatMap((c) => [
      c.authToken,
      `auth_token=${encodeURIComponent(c.authToken)}`,
      `user_email=${encodeURIComponent(c.userEmail)}`,
    ]);
    for (const credential of world.sandbox.credentials)
      expect(credential.authToken.length).toBeGreaterThan(8);
    for (const password of passwords) expect(stored).not.toContain(password);
    for (const secret of secretParams) expect(stored).not.toContain(secret);
    expect(stored).not.toContain('user_email=');
    expect(stored).not.toContain('auth_token');
    // The marker docs/warehouse.md ("Raw zone") gives for a kept-out credential.
    expect(stored).toContain('[kept out of the raw zone]');
    // The e-mail itself is the account's (accounts.user_email), never in the raw zone.
    const raw = await rawZoneText(db);
    for (const credential of world.sandbox.credentials)
      expect(raw).not.toContain(credential.userEmail);
    expect(raw).not.toMatch(/user_email/);
    if (world.warehouse.databaseUrl) {
      // What leaves the building in a backup: the whole database as pg_dump writes it.
      const { stdout: dump } = await execFileAsync('pg_dump', [world.warehouse.databaseUrl], {
        maxBuffer: 256 * 1024 * 1024,
      });
      expect(dump).toContain('raw_bodies');
      expect(dump).toContain('COPY public.raw_read_sets');
      for (const password of passwords) expect(dump).not.toContain(password);
      for (const secret of secretParams) expect(dump).not.toContain(secret);
      expect(dump).not.toContain('user_email=');
      expect(dump).not.toContain('auth_token');
    }
    // has_site_credentials still derives from what was kept.
    const withCredentials = await sql<{ n: number }>`
      select count(*)::int as n from listings where has_site_credentials`.execute(db);
    expect(withCredentials.rows[0]?.n).toBeGreaterThan(0);
  });

  it('a business that failed to write keeps none of its reads (same transaction)', async () => {
    const night = nightOf(world.sandbox);
    // A trigger that refuses one business's listings makes its transaction roll back.
    const [first] = (await listBusinesses(world.api, world.sandbox.credentials[0]!)).records;
    const victim = first!.id;
    await sql
      .raw(`create function refuse_victim() returns trigger language plpgsql as $$
        begin if new.business_id = ${victim} then raise exception 'refused for the test'; end if;
        return new; end $$`)
      .execute(world.warehouse.db);
    await sql
      .raw(`create trigger refuse_victim before insert on listings
        for each row execute function refuse_victim()`)
      .execute(world.warehouse.db);
    const result = await sync(world.warehouse, world.api, world.sandbox.credentials, {
      now: () => night,
    });
    expect(result.status).toBe('partial');
    const victimReads = await world.warehouse.db
      .selectFrom('raw_reads')
      .select('operation')
      .where('business_id', '=', victim)
      .execute();
    expect(victimReads).toEqual([]);
    const others = await world.warehouse.db
      .selectFrom('raw_reads')
      .select('business_id')
      .distinct()
      .where('operation', '=', 'list_listings')
      .execute();
    expect(others.length).toBe(WORLD.accounts * WORLD.businessesPerAccount - 1);
  });

  it('RAW_RETENTION_DAYS prunes older reads at the end of a run, and the bodies nothing refers to', async () => {
    const first = await sync(world.warehouse, world.api, world.sandbox.credentials, {
      now: () => nightOf(world.sandbox),
    });
    expect(first.status).toBe('succeeded');
    const firstReads = await rowCount(world.warehouse.db, 'raw_reads');
    world.sandbox.advanceDays(1);
    // Ten days later by the run's clock; the sandbox's data moved on by one day.
    const later = new Date(nightOf(world.sandbox).getTime() + 9 * 86_400_000);
    const kept = await sync(world.warehouse, world.api, world.sandbox.credentials, {
      now: () => later,
    });
    expect(kept.status).toBe('succeeded');
    expect(await rowCount(world.warehouse.db, 'raw_reads')).toBe(2 * firstReads);
    const second = await sync(world.warehouse, world.api, world.sandbox.credentials, {
      now: () => later,
      rawRetentionDays: 5,
    });
    expect(second.status).toBe('succeeded');
    const runs = await world.warehouse.db
      .selectFrom('raw_reads')
      .select('run_id')
      .distinct()
      .execute();
    expect(new Set(runs.map((r) => r.run_id))).toEqual(new Set([kept.runId, second.runId]));
    const orphans = await sql<{ n: number }>`
      select count(*)::int as n from raw_bodies b
      where not exists (select 1 from raw_reads r where decode(r.body_hash, 'hex') = b.body_hash)`.execute(
      world.warehouse.db,
    );
    expect(orphans.rows[0]?.n).toBe(0);
    // Every body of the last night is still there to show and replay.
    const missing = await sql<{ n: number }>`
      select count(*)::int as n from raw_reads r
      where not exists (select 1 from raw_bodies b where b.body_hash = decode(r.body_hash, 'hex'))`.execute(
      world.warehouse.db,
    );
    expect(missing.rows[0]?.n).toBe(0);
  });

  it('replays the nights into another schema: every documented table and view is equal', async () => {
    // Night 0, a night with changes, a business archived upstream, another night.
    expect(
      (
        await sync(world.warehouse, world.api, world.sandbox.credentials, {
          now: () => nightOf(world.sandbox),
        })
      ).status,
    ).toBe('succeeded');
    world.sandbox.advanceDays(1);
    expect(
      (
        await sync(world.warehouse, world.api, world.sandbox.credentials, {
          now: () => nightOf(world.sandbox),
        })
      ).status,
    ).toBe('succeeded');
    const credential = world.sandbox.credentials[1]!;
    const [gone] = (await listBusinesses(world.api, credential)).records;
    await archiveBusiness(world.api, credential, gone!.id);
    world.sandbox.advanceDays(1);
    expect(
      (
        await sync(world.warehouse, world.api, world.sandbox.credentials, {
          now: () => nightOf(world.sandbox),
        })
      ).status,
    ).toBe('succeeded');
    world.sandbox.advanceDays(1);
    expect(
      (
        await sync(world.warehouse, world.api, world.sandbox.credentials, {
          now: () => nightOf(world.sandbox),
        })
      ).status,
    ).toBe('succeeded');

    const live = await documentedContent(world.warehouse.db);
    // The nights did change things, or the comparison would prove little.
    expect(live['listing_status_history']!.length).toBeGreaterThan(live['listings']!.length);
    expect(live['alerts']!.length).toBeGreaterThan(0);
    expect(live['businesses']!.some((row) => JSON.parse(row).archived_at !== null)).toBe(true);
    expect(new Set(live['rank_observations']!.map((row) => JSON.parse(row).observed_on)).size).toBe(
      4,
    );

    const progress: number[] = [];
    const result = await replay({
      warehouse: world.warehouse,
      ...(world.warehouse.databaseUrl ? { databaseUrl: world.warehouse.databaseUrl } : {}),
      into: 'replayed',
      logger: silentLogger(),
      onProgress: (p) => progress.push(p.runsDone),
    });
    expect(result.runs).toBe(4);
    expect(progress).toEqual([1, 2, 3, 4]);

    // The live schema is untouched and still current.
    expect(await documentedContent(world.warehouse.db)).toEqual(live);
    const replayed = await inSchema(world.warehouse, 'replayed', (db) => documentedContent(db));
    for (const relation of Object.keys(live)) {
      expect(replayed[relation], relation).toEqual(live[relation]);
    }
    // Recomputed, never delivered.
    const delivered = await inSchema(world.warehouse, 'replayed', (db) =>
      sql<{
        n: number;
      }>`select count(*)::int as n from alerts where delivered_at is not null`.execute(db),
    );
    expect(delivered.rows[0]?.n).toBe(0);
  });

  it('refuses a range the raw zone does not cover, and a schema that is not fresh', async () => {
    await expect(
      replay({
        warehouse: world.warehouse,
        into: 'empty_zone',
        logger: silentLogger(),
        ...(world.warehouse.databaseUrl ? { databaseUrl: world.warehouse.databaseUrl } : {}),
      }),
    ).rejects.toThrow(/holds no reads at all/);
    expect(
      (
        await sync(world.warehouse, world.api, world.sandbox.credentials, {
          now: () => nightOf(world.sandbox),
        })
      ).status,
    ).toBe('succeeded');
    const error = await replay({
      warehouse: world.warehouse,
      into: 'too_early',
      from: '2026-02-01',
      logger: silentLogger(),
      ...(world.warehouse.databaseUrl ? { databaseUrl: world.warehouse.databaseUrl } : {}),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReplayCoverageError);
    expect((error as Error).message).toBe(
      'The raw zone does not cover --from 2026-02-01: it holds reads from 2026-03-01 to 2026-03-01.',
    );
    await expect(
      replay({ warehouse: world.warehouse, into: 'public', logger: silentLogger() }),
    ).rejects.toThrow(/live schema|already holds tables/);
  });
});
