/**
 * A business's reads and the raw zone's probe in one statement (src/raw/reads.ts,
 * `writeReadsIfBodiesKept` given reads): when every body is kept already, as on an unchanged night, the
 * reads go in with the probe; when any body is new, the probe writes nothing and the new
 * bodies are kept before the reads (`writeRawReads`, src/raw/capture.ts).
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bodyHash } from '../../src/raw/body.ts';
import { type KeptRead, writeRawReads } from '../../src/raw/capture.ts';
import { type RawReadToInsert, writeReadsIfBodiesKept } from '../../src/raw/reads.ts';
import { createTestWarehouse, type TestWarehouse, testBackends } from '../helpers/database.ts';

const AT = new Date(Date.UTC(2026, 2, 1, 3));

/** A read of business 7's listings (or its reviews) with this body. */
function read(text: string, operation = 'list_listings'): KeptRead {
  const path = operation === 'list_listings' ? 'listings' : 'reviews';
  return {
    accountName: 'east',
    businessId: 7,
    operation,
    request: `/businesses/7/${path}.json`,
    attempt: 1,
    status: 200,
    text,
    hash: bodyHash(text),
    observedAt: AT,
  };
}

function row(runId: string, kept: KeptRead): RawReadToInsert {
  return {
    run_id: runId,
    account_name: kept.accountName,
    business_id: kept.businessId,
    operation: kept.operation,
    request: kept.request,
    attempt: kept.attempt,
    status: kept.status,
    observed_at: AT,
    body_hash: kept.hash,
    uncommitted: false,
  };
}

describe.each(testBackends)('raw reads written with the probe (%s)', (backend) => {
  let warehouse: TestWarehouse;
  beforeEach(async () => {
    warehouse = await createTestWarehouse(backend);
  });
  afterEach(async () => {
    await warehouse.close();
  });

  async function stored() {
    const { rows } = await sql<{ run_id: string; body_hash: string; operation: string }>`
      select run_id::text, body_hash, operation from raw_reads order by read_id`.execute(
      warehouse.db,
    );
    const bodies = await sql<{ n: number }>`select count(*)::int as n from raw_bodies`.execute(
      warehouse.db,
    );
    return { reads: rows, bodies: bodies.rows[0]?.n };
  }

  it('every body kept: the reads go in with the probe, once, in read order', async () => {
    const night = [read('{"listings":[1]}'), read('{"reviews":[2]}', 'list_reviews')];
    const first = randomUUID();
    await writeRawReads(warehouse.db, { runId: first }, night);
    // An unchanged night as the sync writes it.
    const second = randomUUID();
    await writeRawReads(warehouse.db, { runId: second }, night);
    // And the probe itself says so.
    const third = randomUUID();
    const kept = await writeReadsIfBodiesKept(
      warehouse.db,
      [...night].sort((a, b) => a.hash.localeCompare(b.hash)),
      new Date(AT.getTime() - 8 * 86_400_000),
      night.map((r) => row(third, r)),
    );
    expect(kept.readsWritten).toBe(true);
    expect(kept.bases.every((base) => base.known)).toBe(true);
    const after = await stored();
    expect(after.bodies).toBe(2);
    expect(after.reads.map((r) => [r.run_id, r.operation, r.body_hash])).toEqual(
      [first, second, third].flatMap((run) => [
        [run, 'list_listings', night[0]?.hash],
        [run, 'list_reviews', night[1]?.hash],
      ]),
    );
  });

  it('a body not kept: the probe writes nothing, and writeRawReads keeps the body, then the reads', async () => {
    const kept = read('{"listings":[1]}');
    await writeRawReads(warehouse.db, { runId: randomUUID() }, [kept]);
    const changed = read('{"reviews":[3]}', 'list_reviews');
    const night = [kept, changed];
    const run = randomUUID();
    const probe = await writeReadsIfBodiesKept(
      warehouse.db,
      night,
      new Date(AT.getTime() - 8 * 86_400_000),
      night.map((r) => row(run, r)),
    );
    expect(probe.readsWritten).toBe(false);
    expect(probe.bases.map((base) => base.known)).toEqual([true, false]);
    expect((await stored()).reads).toHaveLength(1);

    await writeRawReads(warehouse.db, { runId: run }, night);
    const after = await stored();
    expect(after.bodies).toBe(2);
    expect(after.reads.filter((r) => r.run_id === run).map((r) => r.body_hash)).toEqual([
      kept.hash,
      changed.hash,
    ]);
  });

  it('refuses reads whose body is not among the bodies asked, writing nothing', async () => {
    const kept = read('{"listings":[1]}');
    await writeRawReads(warehouse.db, { runId: randomUUID() }, [kept]);
    const other = read('{"reviews":[4]}', 'list_reviews');
    await expect(
      writeReadsIfBodiesKept(
        warehouse.db,
        [kept],
        AT,
        [kept, other].map((r) => row(randomUUID(), r)),
      ),
    ).rejects.toThrow(`A raw read's body ${other.hash} is not among the bodies asked.`);
    expect((await stored()).reads).toHaveLength(1);
  });
});
