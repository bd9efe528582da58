/**
 * The write commands where the contract is ambiguous (docs/upstream.md, Quirks): both
 * spellings of the old hours array and of videos, read from the CLI's input and sent in
 * one form (checked on the wire, through a recording proxy in front of the sandbox); the
 * category create answers, kept in `businesses.sub_category_name` across syncs; and the
 * refusal of a second keyword with the text of a live one.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Credential } from '../../src/api/index.ts';
import { createApiClient, listBusinesses, listKeywords } from '../../src/api/index.ts';
import { silentLogger } from '../../src/log.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { runSync } from '../../src/sync/run.ts';
import {
  createTestWarehouse,
  type TestWarehouse,
  testBackends,
  truncateAll,
} from '../helpers/database.ts';
import { businessBody, type CommandRun, type WorkflowRunner, workflowRunner } from './harness.ts';

const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const OLD_HOURS = DAYS.map((day) =>
  day === 'Sunday'
    ? { day, holiday: true }
    : { day, holiday: false, start_time: '09:00am', end_time: '05:00pm' },
);

interface Sent {
  method: string;
  path: string;
  body: string;
}

/** Forwards every request to the sandbox and records what the client sent. */
async function recordingProxy(
  target: string,
): Promise<{ server: Server; url: string; sent: Sent[] }> {
  const sent: Sent[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      sent.push({ method: req.method ?? '', path: (req.url ?? '').split('?')[0]!, body });
      const answer = await fetch(`${target}${req.url}`, {
        method: req.method ?? 'GET',
        headers: { 'content-type': String(req.headers['content-type'] ?? 'application/json') },
        ...(body === '' ? {} : { body }),
      });
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(await answer.text());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sent };
}

describe.each(testBackends)('business input and keywords (%s)', (backend) => {
  let sandbox: RunningSandbox;
  let warehouse: TestWarehouse;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let credentials: Credential[];
  let cli: WorkflowRunner;

  const as1 = (args: string[], options?: { stdin?: string }): Promise<CommandRun> =>
    cli.run([...args, '--account', 'account-1'], options);
  const creates = () =>
    proxy.sent.filter((s) => s.method === 'POST' && /\/businesses(\.json)?$/.test(s.path));

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 43, accounts: 2, businessesPerAccount: 3, port: 0 });
    proxy = await recordingProxy(sandbox.baseUrl);
    credentials = sandbox.credentials.map((c) => ({ ...c, baseUrl: proxy.url }));
    warehouse = await createTestWarehouse(backend);
  });
  beforeEach(async () => {
    await truncateAll(warehouse);
    cli = workflowRunner(warehouse, credentials);
    proxy.sent.length = 0;
  });
  afterEach(() => {
    proxy.sent.length = 0;
  });
  afterAll(async () => {
    await warehouse?.close();
    await new Promise((resolve) => proxy?.server.close(resolve));
    await sandbox?.close();
  });

  async function create(fields: Record<string, unknown>): Promise<CommandRun> {
    return as1([
      'api',
      'businesses',
      'create',
      '--file',
      cli.file('create.json', JSON.stringify({ business: businessBody(fields) })),
    ]);
  }

  it.each(['location_biz_hours_attributes', 'location_biz_hour_attributes'])(
    'reads the old hours spelled %s and sends biz_hours for all seven days',
    async (key) => {
      const run = await create({ [key]: OLD_HOURS });
      expect(run.code).toBe(0);
      expect(run.stderr).toContain(`${key} is deprecated`);
      const [sent] = creates();
      const business = JSON.parse(sent!.body).business;
      expect(Object.keys(business)).not.toContain('location_biz_hours_attributes');
      expect(Object.keys(business)).not.toContain('location_biz_hour_attributes');
      expect(business.biz_hours.days.Monday).toEqual({
        type: 'open',
        slots: [{ start: '09:00am', end: '05:00pm' }],
      });
      expect(business.biz_hours.days.Sunday).toEqual({ type: 'closed' });
      expect(Object.keys(business.biz_hours.days)).toHaveLength(7);
      const row = await warehouse.db
        .selectFrom('businesses')
        .select('business_hours')
        .where('business_id', '=', JSON.parse(run.stdout).id)
        .executeTakeFirstOrThrow();
      expect(row.business_hours).toContainEqual({
        day: 'Monday',
        start_time: '09:00',
        end_time: '17:00',
      });
    },
  );

  it.each(['video_attributes', 'videos_attributes'])(
    'reads videos spelled %s and sends them as video_attributes',
    async (key) => {
      const videos = [{ link: 'https://videos.example/tour.mp4' }];
      const run = await create({ [key]: videos });
      expect(run.code).toBe(0);
      const business = JSON.parse(creates()[0]!.body).business;
      expect(business.video_attributes).toEqual(videos);
      expect(Object.keys(business)).not.toContain('videos_attributes');
    },
  );

  it('refuses videos given under both spellings, before any request', async () => {
    const videos = [{ link: 'https://videos.example/tour.mp4' }];
    const run = await create({ video_attributes: videos, videos_attributes: videos });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'listings-sync: give the videos once: video_attributes and videos_attributes are both set. Use video_attributes.\n',
    );
    expect(creates()).toEqual([]);
  });

  it('refuses a video without a link, naming the field', async () => {
    const run = await create({ videos_attributes: [{ title: 'no link' }] });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('business.videos_attributes.0.link');
    expect(creates()).toEqual([]);
  });

  it('stores the category create answers, keeps it through a sync, and follows a new sub_category', async () => {
    const run = await create({});
    expect(run.code).toBe(0);
    const { id, subCategoryName } = JSON.parse(run.stdout);
    expect(subCategoryName).toBe('Plumbers');
    const category = async () =>
      (
        await warehouse.db
          .selectFrom('businesses')
          .select('sub_category_name')
          .where('business_id', '=', id)
          .executeTakeFirstOrThrow()
      ).sub_category_name;
    expect(await category()).toBe('Plumbers');

    // A full sync (reference data included) reads the business but no category: kept.
    const api = createApiClient({ logger: silentLogger() });
    try {
      const result = await runSync({
        warehouse,
        api,
        credentials: [credentials[0]!],
        logger: silentLogger(),
        trigger: 'test',
      });
      expect(result.status).toBe('succeeded');
    } finally {
      await api.close();
    }
    expect(await category()).toBe('Plumbers');

    const updated = await as1(['api', 'businesses', 'update', String(id), '--file', '-'], {
      stdin: JSON.stringify({ sub_category: 'Electricians' }),
    });
    expect(updated.code).toBe(0);
    expect(await category()).toBe('Electricians');
  });

  describe('a keyword with the text of a live one', () => {
    let businessId: number;
    let existing: { id: number; keyword: string };
    const liveTexts = async () => {
      const api = createApiClient({ logger: silentLogger() });
      try {
        return (await listKeywords(api, credentials[0]!, businessId)).records
          .filter((k) => !k.archived)
          .map((k) => k.keyword.toLowerCase());
      } finally {
        await api.close();
      }
    };

    beforeEach(async () => {
      const api = createApiClient({ logger: silentLogger() });
      try {
        businessId = (await listBusinesses(api, credentials[0]!)).records[0]!.id;
        const live = (await listKeywords(api, credentials[0]!, businessId)).records.filter(
          (k) => !k.archived,
        );
        existing = { id: live[0]!.id, keyword: live[0]!.keyword };
      } finally {
        await api.close();
      }
    });

    it('is refused by api keywords add, whatever its case and spacing, and nothing is sent', async () => {
      const before = await liveTexts();
      // One argument is one keyword: the live text in capitals, with extra spaces.
      const shouted = ` ${existing.keyword.toUpperCase().split(' ').join('   ')} `;
      const run = await as1(['api', 'keywords', 'add', String(businessId), shouted]);
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(
        `listings-sync: business ${businessId} already has the keyword "${existing.keyword}" (id ${existing.id}); ranks are keyed by keyword text, so a second one would share its ranks. Nothing was added.\n`,
      );
      expect(proxy.sent.filter((s) => s.path.includes('add_keyword'))).toEqual([]);
      expect(await liveTexts()).toEqual(before);
    });

    it('is never added by keywords apply', async () => {
      const before = await liveTexts();
      const file = cli.file(
        'keywords.json',
        JSON.stringify({
          businesses: [
            { id: businessId, keywords: [...before.map((k) => ` ${k.toUpperCase()} `)] },
          ],
        }),
      );
      const run = await cli.run(['keywords', 'apply', '--file', file, '--account', 'account-1']);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`Business ${businessId}: no change`);
      expect(proxy.sent.filter((s) => s.path.includes('add_keyword'))).toEqual([]);
      expect(await liveTexts()).toEqual(before);
    });
  });
});
