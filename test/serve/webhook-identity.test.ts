/**
 * A webhook's identity is its event kind and its id (`<event>:<id>`): another kind of event
 * about the same ad run is stored, not dropped as a duplicate, while a redelivery of the
 * same event is. Migration 0010 rewrites the bare keys stored before, so their
 * redeliveries are still recognised.
 */
import { createHmac } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningServe } from '../../src/serve/server.ts';
import { type TestWarehouse, testBackends, truncateAll } from '../helpers/database.ts';
import { type Intake, startIntake } from './helpers.ts';

const SECRET = 'whsec-identity-5d2a';
const BOOST = 'social_post.boost_created';

async function post(url: string, body: string) {
  const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
  const response = await fetch(`${url}/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-signature': signature },
    body,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

function event(kind: string, adRunId: string, extra: Record<string, unknown> = {}) {
  return {
    event: kind,
    timestamp: '2026-01-02T03:04:05Z',
    account_id: 1001,
    location_id: null,
    data: { ad_run_id: adRunId, post_id: '123_456', platform: 'facebook', ...extra },
  };
}

async function keys(warehouse: TestWarehouse): Promise<string[]> {
  const rows = await warehouse.db
    .selectFrom('webhook_events')
    .select('event_key')
    .orderBy('event_key')
    .execute();
  return rows.map((r) => r.event_key);
}

describe.each(testBackends)('webhook identity (%s)', (backend) => {
  let intake: Intake;
  let warehouse: TestWarehouse;
  let serve: RunningServe;

  beforeAll(async () => {
    intake = await startIntake(backend, { WEBHOOK_SECRET: SECRET });
    ({ warehouse, serve } = intake);
  });
  afterAll(() => intake?.close());
  beforeEach(async () => {
    await truncateAll(warehouse);
  });

  it('stores a different event kind about the same ad run, and drops a redelivery of the same event', async () => {
    const created = await post(serve.url, JSON.stringify(event(BOOST, 'run-7')));
    const ended = await post(serve.url, JSON.stringify(event('social_post.boost_ended', 'run-7')));
    // The same boost again, serialised differently (key order, spacing): still a duplicate.
    const { data, ...rest } = event(BOOST, 'run-7');
    const again = await post(serve.url, JSON.stringify({ data, ...rest }, null, 2));

    expect(created).toMatchObject({
      status: 200,
      body: { duplicate: false, event_key: `${BOOST}:run-7` },
    });
    expect(ended).toMatchObject({ status: 200, body: { duplicate: false } });
    expect(again).toMatchObject({
      status: 200,
      body: { duplicate: true, event_key: `${BOOST}:run-7` },
    });

    const rows = await warehouse.db
      .selectFrom('webhook_events')
      .select(['event', 'event_key'])
      .orderBy('event')
      .execute();
    expect(rows.map((r) => r.event)).toEqual([BOOST, 'social_post.boost_ended']);
    // A kind whose id field is not documented is keyed by its body.
    expect(rows[1]?.event_key).toMatch(/^sha256:[0-9a-f]{64}$/);
    const boosts = await warehouse.db
      .selectFrom('social_post_boosts')
      .select(['ad_run_id', 'event_key'])
      .execute();
    expect(boosts).toEqual([{ ad_run_id: 'run-7', event_key: `${BOOST}:run-7` }]);
  });

  it('keys a boost without an ad_run_id by the hash of its body', async () => {
    const body = JSON.stringify({ event: BOOST, data: { post_id: '1_2' } });
    const first = await post(serve.url, body);
    const second = await post(serve.url, body);
    expect(first.body['event_key']).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(second.body['duplicate']).toBe(true);
    expect(await keys(warehouse)).toHaveLength(1);
    expect(await warehouse.db.selectFrom('social_post_boosts').selectAll().execute()).toHaveLength(
      0,
    );
  });

  it('migration 0010 rewrites stored bare keys, so an old event redelivered is still a duplicate', async () => {
    const migration = await import('../../migrations/0010_webhook_event_keys.ts');
    const db = warehouse.db as unknown as Kysely<unknown>;
    // Back to the key format before 0010, with rows as it stored them.
    await migration.down(db);
    try {
      const old = event(BOOST, 'old-run-1');
      await sql`
        insert into webhook_events (event_key, event, account_id, location_id, received_at, payload)
        values ('old-run-1', ${BOOST}, 1001, null, now(), ${JSON.stringify(old)}::jsonb),
               ('old-run-2', 'social_post.boost_ended', 1001, null, now(), '{}'::jsonb),
               ('old-run-3', null, null, null, now(), '{}'::jsonb),
               ('sha256:abc', 'review.created', null, null, now(), '{}'::jsonb)`.execute(
        warehouse.db,
      );
      await sql`
        insert into social_post_boosts (ad_run_id, event_key, received_at)
        values ('old-run-1', 'old-run-1', now())`.execute(warehouse.db);
    } finally {
      await migration.up(db);
    }

    expect(await keys(warehouse)).toEqual([
      'old-run-3',
      'sha256:abc',
      `${BOOST}:old-run-1`,
      'social_post.boost_ended:old-run-2',
    ]);
    const boost = await warehouse.db
      .selectFrom('social_post_boosts')
      .select('event_key')
      .executeTakeFirstOrThrow();
    expect(boost.event_key).toBe(`${BOOST}:old-run-1`);

    const redelivered = await post(serve.url, JSON.stringify(event(BOOST, 'old-run-1')));
    expect(redelivered).toMatchObject({ status: 200, body: { duplicate: true } });
    expect(await keys(warehouse)).toHaveLength(4);
  });
});
