/**
 * `listings-sync alerts test` against a local receiver: one clearly marked test message
 * per configured sink (the webhook's signed like a real alert's), one line per sink with
 * ok or failed and the HTTP status, exit 0 only when every sink took it, 1 otherwise or
 * with no sink; never the Slack URL's secret path nor the signing secret in its output;
 * nothing written to the warehouse.
 */
import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';
import {
  createTestWarehouse,
  databaseEnv,
  type TestWarehouse,
  testBackends,
} from '../helpers/database.ts';

const SIGNING_SECRET = 'sign-secret-6a2f';
/** Slack's incoming-webhook URLs carry their secret in the path. */
const SLACK_PATH = '/services/T0AB/B0CD/SLACKPATHSECRET9';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
}

/** Answers each path with the status `answers` gives it (200 by default). */
async function startReceiver() {
  const received: Received[] = [];
  const answers = new Map<string, [number, string]>();
  const server = createServer((request, response) => {
    let raw = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      raw += chunk;
    });
    request.on('end', () => {
      const path = request.url ?? '';
      received.push({ path, headers: request.headers, raw });
      const [status, body] = answers.get(path) ?? [200, 'ok'];
      response.writeHead(status).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    answers,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe.each(testBackends)('listings-sync alerts test (%s)', (backend) => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let parent: string;
  let pgliteDir: string;
  let target: TestWarehouse | undefined;
  let env: Record<string, string>;

  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });
  beforeEach(async () => {
    receiver.received.length = 0;
    receiver.answers.clear();
    parent = mkdtempSync(join(tmpdir(), 'ls-alerts-test-'));
    // PGlite: a data directory that does not exist, and must not after the command.
    pgliteDir = join(parent, 'pglite');
    target = backend === 'postgres' ? await createTestWarehouse('postgres') : undefined;
    env = {
      ...(target ? databaseEnv(target, pgliteDir) : { PGLITE_DATA_DIR: pgliteDir }),
      ALERT_SLACK_WEBHOOK_URL: `${receiver.url}${SLACK_PATH}`,
      ALERT_WEBHOOK_URL: `${receiver.url}/hook`,
      ALERT_WEBHOOK_SECRET: SIGNING_SECRET,
    };
  });
  afterEach(async () => {
    await target?.close();
    rmSync(parent, { recursive: true, force: true });
  });

  async function expectNothingWritten() {
    if (!target) {
      expect(existsSync(pgliteDir)).toBe(false);
      return;
    }
    const { rows } = await sql<{ alerts: number; sinks: number }>`
      select (select count(*) from alerts)::int as alerts,
        (select count(*) from alert_sinks)::int as sinks`.execute(target.db);
    expect(rows[0]).toEqual({ alerts: 0, sinks: 0 });
  }

  function expectNoSecret(text: string) {
    expect(text).not.toContain('SLACKPATHSECRET9');
    expect(text).not.toContain('/services/');
    expect(text).not.toContain(SIGNING_SECRET);
  }

  it('posts one marked test message to each sink, the webhook signed, and exits 0', async () => {
    const result = await runCli(['alerts', 'test'], env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      `slack (${receiver.url}): ok, HTTP 200\nwebhook (${receiver.url}): ok, HTTP 200\n`,
    );
    expectNoSecret(result.stdout + result.stderr);

    expect(receiver.received.map((r) => r.path).sort()).toEqual(['/hook', SLACK_PATH]);
    const slack = receiver.received.find((r) => r.path === SLACK_PATH)!;
    expect((JSON.parse(slack.raw) as { text: string }).text).toMatch(
      /^:white_check_mark: \*TEST\* Test alert from listings-sync \(`listings-sync alerts test`\)/,
    );
    const hook = receiver.received.find((r) => r.path === '/hook')!;
    expect(hook.headers['x-service-signature']).toBe(
      `sha256=${createHmac('sha256', SIGNING_SECRET).update(hook.raw).digest('hex')}`,
    );
    const body = JSON.parse(hook.raw) as Record<string, unknown>;
    expect(body).toMatchObject({ kind: 'test', test: true, alert_id: null });
    expect(hook.headers['idempotency-key']).toBe(body['dedupe_key']);
    await expectNothingWritten();
  });

  it('reports each failing sink with its HTTP status and exits 1', async () => {
    receiver.answers.set(SLACK_PATH, [404, 'no_service']);
    const result = await runCli(['alerts', 'test'], env);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(
      `slack (${receiver.url}): failed, HTTP 404: no_service\n` +
        `webhook (${receiver.url}): ok, HTTP 200\n`,
    );
    expectNoSecret(result.stdout + result.stderr);
    await expectNothingWritten();
  });

  it('reports a sink that does not answer, without its path', async () => {
    const closed = await startReceiver();
    await closed.close();
    const result = await runCli(['alerts', 'test'], {
      ...env,
      ALERT_SLACK_WEBHOOK_URL: `${closed.url}${SLACK_PATH}`,
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      new RegExp(`^slack \\(${closed.url.replace(/\./g, '\\.')}\\): failed, no answer \\(.+\\)\n`),
    );
    expectNoSecret(result.stdout + result.stderr);
  });

  it('with no sink configured says so and exits 1', async () => {
    const result = await runCli(['alerts', 'test'], {
      ...(target ? databaseEnv(target, pgliteDir) : { PGLITE_DATA_DIR: pgliteDir }),
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('No alert sink is configured');
    expect(receiver.received).toEqual([]);
    await expectNothingWritten();
  });
});
