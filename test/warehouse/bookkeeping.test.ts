import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { markAccountSynced, upsertAccount } from '../../src/warehouse/runs/accounts.ts';
import {
  emptySyncRunStats,
  finishSyncRun,
  startSyncRun,
} from '../../src/warehouse/runs/sync-runs.ts';
import { recordWebhookEvent } from '../../src/warehouse/runs/webhook-events.ts';
import { writeReferenceData } from '../../src/warehouse/tables/reference-data.ts';
import { quarantineRecords } from '../../src/warehouse/write/quarantine.ts';
import { createTestWarehouse, testBackends, truncateAll } from '../helpers/database.ts';
import { ACCOUNT, ctx, DAY1, DAY2, listing, RUN_ID, snapshot } from './fixtures.ts';
import { addAccount, dumpAll, write } from './helpers.ts';

const SITE_PASSWORD = 'hunter2-directory-pass';
const AUTH_TOKEN = 'tok_live_9f8e7d6c5b4a';

describe.each(testBackends)(
  'runs, accounts, reference data, quarantine, alerts (%s)',
  (backend) => {
    let wh: Warehouse;
    beforeAll(async () => {
      wh = await createTestWarehouse(backend);
    });
    beforeEach(async () => {
      await truncateAll(wh);
    });
    afterAll(async () => {
      await wh.close();
    });

    it('records a sync run from running to its outcome', async () => {
      const runId = await startSyncRun(wh.db, {
        trigger: 'cli',
        streams: ['listings', 'reviews'],
        accounts: [ACCOUNT],
        shard: '1/2',
      });
      expect(runId).toMatch(/^[0-9a-f-]{36}$/);
      let run = await wh.db.selectFrom('sync_runs').selectAll().executeTakeFirstOrThrow();
      expect(run).toMatchObject({
        run_id: runId,
        status: 'running',
        trigger: 'cli',
        streams: ['listings', 'reviews'],
        accounts: [ACCOUNT],
        shard: '1/2',
        finished_at: null,
      });
      await finishSyncRun(wh.db, runId, {
        status: 'partial',
        stats: {
          ...emptySyncRunStats(),
          failures: [
            {
              credential: ACCOUNT,
              businessId: null,
              stream: 'businesses',
              reason: `https://x/api/v2/businesses?auth_token=${AUTH_TOKEN}`,
            },
          ],
        },
        error: `GET /businesses?auth_token=${AUTH_TOKEN} failed`,
      });
      run = await wh.db.selectFrom('sync_runs').selectAll().executeTakeFirstOrThrow();
      expect(run.status).toBe('partial');
      expect(run.finished_at).toBeInstanceOf(Date);
      expect(JSON.stringify(run)).not.toContain(AUTH_TOKEN);
    });

    it('upserts accounts without rewriting unchanged ones, and never stores a token', async () => {
      await upsertAccount(wh.db, {
        name: ACCOUNT,
        userEmail: 'a@example.com',
        baseUrl: 'https://u.example',
      });
      const first = await wh.db.selectFrom('accounts').selectAll().executeTakeFirstOrThrow();
      await upsertAccount(wh.db, {
        name: ACCOUNT,
        userEmail: 'a@example.com',
        baseUrl: 'https://u.example',
      });
      expect(await wh.db.selectFrom('accounts').selectAll().executeTakeFirstOrThrow()).toEqual(
        first,
      );
      await upsertAccount(wh.db, {
        name: ACCOUNT,
        userEmail: 'b@example.com',
        baseUrl: 'https://u.example',
      });
      await markAccountSynced(wh.db, ACCOUNT, DAY2);
      expect(
        await wh.db.selectFrom('accounts').selectAll().executeTakeFirstOrThrow(),
      ).toMatchObject({
        name: ACCOUNT,
        user_email: 'b@example.com',
        last_synced_at: DAY2,
      });
    });

    it('writes reference data with counts', async () => {
      const data = {
        countries: [
          { id: 1, name: 'United States' },
          { id: 2, name: 'Canada' },
        ],
        states: [
          { id: 10, name: 'Maine', iso: 'ME', countryId: 1 },
          { id: 11, name: 'Ontario', iso: null, countryId: 2 },
        ],
        subCategories: [{ id: 100, name: 'Dentist' }],
      };
      expect(await writeReferenceData(wh.db, data)).toEqual({
        countries: { inserted: 2, updated: 0, unchanged: 0, deleted: 0 },
        states: { inserted: 2, updated: 0, unchanged: 0, deleted: 0 },
        sub_categories: { inserted: 1, updated: 0, unchanged: 0, deleted: 0 },
      });
      const changed = { ...data, states: [{ id: 11, name: 'Ontario', iso: 'ON', countryId: 2 }] };
      expect(await writeReferenceData(wh.db, changed)).toEqual({
        countries: { inserted: 0, updated: 0, unchanged: 2, deleted: 0 },
        states: { inserted: 0, updated: 1, unchanged: 0, deleted: 0 },
        sub_categories: { inserted: 0, updated: 0, unchanged: 1, deleted: 0 },
      });
      expect(
        await wh.db.selectFrom('states').select(['state_id', 'iso']).orderBy('state_id').execute(),
      ).toEqual([
        { state_id: 10, iso: 'ME' },
        { state_id: 11, iso: 'ON' },
      ]);
    });

    it('quarantines rejected records in the business transaction, with secrets removed', async () => {
      await addAccount(wh);
      const result = await write(
        wh,
        snapshot({
          rejected: [
            {
              stream: 'listings',
              location: '4',
              reason: 'status: Invalid option',
              payload: {
                id: 4,
                site_username: 'owner',
                site_password: SITE_PASSWORD,
                status: 'Weird',
              },
            },
            {
              stream: 'reviews',
              location: 'Yelp[2]',
              reason: `bad date in https://x/api/v2/businesses/1/reviews?auth_token=${AUTH_TOKEN}`,
              payload: {
                note: `see ?auth_token=${AUTH_TOKEN}&user_email=a@b.c`,
                token: AUTH_TOKEN,
              },
            },
          ],
        }),
        ctx(DAY1),
      );
      expect(result.quarantined).toBe(2);
      expect(result.stats['quarantine']?.inserted).toBe(2);
      const rows = await wh.db
        .selectFrom('quarantine')
        .selectAll()
        .orderBy('quarantine_id')
        .execute();
      expect(rows).toEqual([
        expect.objectContaining({
          run_id: RUN_ID,
          account_name: ACCOUNT,
          business_id: 1204,
          stream: 'listings',
          location: '4',
          reason: 'status: Invalid option',
          payload: {
            id: 4,
            site_username: '[REDACTED]',
            site_password: '[REDACTED]',
            status: 'Weird',
          },
        }),
        expect.objectContaining({ stream: 'reviews', location: 'Yelp[2]' }),
      ]);
      // Outside a business too.
      expect(
        await quarantineRecords(wh.db, RUN_ID, [
          {
            accountName: ACCOUNT,
            businessId: null,
            stream: 'businesses',
            location: '0',
            reason: 'x',
            payload: null,
          },
        ]),
      ).toBe(1);
    });

    it('no table holds a directory password or an auth token', async () => {
      await addAccount(wh);
      await write(
        wh,
        snapshot({
          listings: [listing(1, { hasSiteCredentials: true })],
          rejected: [
            {
              stream: 'listings',
              location: '1',
              reason: 'bad',
              payload: { site_password: SITE_PASSWORD, auth_token: AUTH_TOKEN },
            },
          ],
        }),
        ctx(DAY1),
      );
      const runId = await startSyncRun(wh.db, {
        trigger: 'test',
        streams: [],
        accounts: [ACCOUNT],
      });
      await finishSyncRun(wh.db, runId, {
        status: 'failed',
        stats: emptySyncRunStats(),
        error: `auth_token=${AUTH_TOKEN}`,
      });
      const dump = await dumpAll(wh);
      expect(dump).not.toContain(SITE_PASSWORD);
      expect(dump).not.toContain(AUTH_TOKEN);
      const { rows } = await sql<{ column_name: string }>`
      select column_name from information_schema.columns where table_schema = current_schema()`.execute(
        wh.db,
      );
      const columns = rows.map((r) => r.column_name);
      for (const forbidden of [
        'site_password',
        'site_username',
        'auth_token',
        'token',
        'password',
      ]) {
        expect(columns).not.toContain(forbidden);
      }
      const stored = await wh.db
        .selectFrom('listings')
        .select('has_site_credentials')
        .executeTakeFirstOrThrow();
      expect(stored.has_site_credentials).toBe(true);
    });

    it('stores a webhook delivery and its boost once', async () => {
      const event = {
        eventKey: 'ar_123',
        event: 'social_post.boost_created',
        accountId: 77,
        locationId: null,
        emittedAt: DAY1,
        receivedAt: DAY2,
        payload: { event: 'social_post.boost_created', data: { ad_run_id: 'ar_123' }, secret: 'x' },
        boost: {
          adRunId: 'ar_123',
          postId: 'p1',
          socialProfileId: 'sp1',
          platform: 'facebook',
          boostState: 'created',
          isBoost: true,
        },
      };
      expect(await recordWebhookEvent(wh.db, event)).toEqual({ stored: true });
      expect(await recordWebhookEvent(wh.db, event)).toEqual({ stored: false });
      const events = await wh.db.selectFrom('webhook_events').selectAll().execute();
      expect(events).toEqual([
        expect.objectContaining({
          event_key: 'ar_123',
          account_id: 77,
          received_at: DAY2,
          payload: {
            event: 'social_post.boost_created',
            data: { ad_run_id: 'ar_123' },
            secret: '[REDACTED]',
          },
        }),
      ]);
      const boosts = await wh.db.selectFrom('social_post_boosts').selectAll().execute();
      expect(boosts).toEqual([
        expect.objectContaining({
          ad_run_id: 'ar_123',
          platform: 'facebook',
          is_boost: true,
          emitted_at: DAY1,
        }),
      ]);
    });
  },
);
