/**
 * `npm run bench:webhooks`: the webhook intake at load (docs/benchmarks.md, "Webhooks at
 * load"). A `serve` process of its own (SYNC_SCHEDULE=off, the production node flags, a
 * PGlite directory, or PostgreSQL when BENCH_DATABASE_URL is set) takes signed deliveries
 * sent open-loop, a new connection each (as a sender without keep-alive does), at each
 * rate for `--seconds`. Per rate it prints p50 and p99 (each also as a multiple of the
 * floor: the p50 of deliveries sent one at a time to the idle server, measured first in
 * the same run) and how many were answered 200, 503 (with Retry-After), something else,
 * or reset or refused with no answer. Then it stops serve and checks exactly-once: every
 * delivery answered 200 is stored, once (each carries an ad run id of its own).
 *
 *   npm run bench:webhooks                              # 200 and 500 a second, 10 s each
 *   npm run bench:webhooks -- --rates 500 --seconds 5
 *   npm run bench:webhooks -- --max-in-flight 65535    # no in-flight limit: as before issue 38
 *
 * Nothing asserts: it prints figures, and exits 1 only when exactly-once does not hold.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openWarehouse } from '../src/warehouse/driver/connection.ts';
import { productionNodeFlags } from './node-flags.ts';

const CLI = new URL('../src/cli/main.ts', import.meta.url).pathname;
const SECRET = 'bench-webhooks-secret';

const { values } = parseArgs({
  options: {
    rates: { type: 'string', default: '200,500' },
    seconds: { type: 'string', default: '10' },
    'max-in-flight': { type: 'string' },
  },
});
const rates = values.rates.split(',').map(Number);
const seconds = Number(values.seconds);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

interface Outcome {
  kind: '200' | '503' | 'other' | 'reset';
  ms: number;
  id: string;
  retryAfter?: string | undefined;
  /** For a reset: the error's code (ECONNRESET, ECONNREFUSED, ETIMEDOUT, EPIPE, …). */
  code?: string | undefined;
}

let sequence = 0;

/** One signed delivery on a connection of its own. */
function deliver(port: number): Promise<Outcome> {
  const id = `bench-${process.pid}-${++sequence}`;
  const body = JSON.stringify({
    event: 'social_post.boost_created',
    account_id: 1001,
    timestamp: new Date().toISOString(),
    data: { ad_run_id: id, post_id: `p-${sequence}`, platform: 'facebook', is_boost: true },
  });
  const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
  const started = performance.now();
  return new Promise((resolve) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/webhooks',
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'x-service-signature': signature,
          connection: 'close',
        },
      },
      (response) => {
        response.resume();
        response.on('end', () => {
          const status = response.statusCode;
          resolve({
            kind: status === 200 ? '200' : status === 503 ? '503' : 'other',
            ms: performance.now() - started,
            id,
            retryAfter: response.headers['retry-after'],
          });
        });
        response.on('error', (error: NodeJS.ErrnoException) =>
          resolve({ kind: 'reset', ms: performance.now() - started, id, code: error.code }),
        );
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) =>
      resolve({ kind: 'reset', ms: performance.now() - started, id, code: error.code }),
    );
    request.end(body);
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Deliveries at `rate` a second for `seconds`, open-loop: each starts on time. */
async function atRate(port: number, rate: number): Promise<Outcome[]> {
  const total = Math.round(rate * seconds);
  const pending: Promise<Outcome>[] = [];
  const start = performance.now();
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    pending.push(deliver(port));
  }
  return Promise.all(pending);
}

function waitForLine(child: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(text)) {
        child.stderr?.off('data', onData);
        resolve();
      }
    };
    child.stderr?.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`serve exited (${code}) before "${text}":\n${seen}`)),
    );
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-webhooks-'));
  const databaseUrl = process.env['BENCH_DATABASE_URL']?.trim();
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '',
    WEBHOOK_SECRET: SECRET,
    SYNC_SCHEDULE: 'off',
    LOG_LEVEL: 'warn',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : { PGLITE_DATA_DIR: join(dir, 'pglite') }),
    ...(values['max-in-flight'] ? { WEBHOOK_MAX_IN_FLIGHT: values['max-in-flight'] } : {}),
  };
  const node = [...productionNodeFlags(), CLI];
  const migrate = spawn(process.execPath, [...node, 'migrate'], { env, stdio: 'ignore' });
  await new Promise((resolve) => migrate.once('exit', resolve));
  if (databaseUrl) {
    const warehouse = await openWarehouse({ databaseUrl });
    await warehouse.db.deleteFrom('social_post_boosts').execute();
    await warehouse.db.deleteFrom('webhook_events').execute();
    await warehouse.close();
  }
  const port = await freePort();
  const metricsPort = await freePort();
  const serve = spawn(process.execPath, [...node, 'serve'], {
    env: { ...env, PORT: String(port), METRICS_PORT: String(metricsPort), LOG_LEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await waitForLine(serve, 'serve listening');
  serve.stderr?.resume();

  const acknowledged: string[] = [];
  // The floor: one at a time, to the idle server.
  const floor: number[] = [];
  for (let i = 0; i < 50; i++) {
    const outcome = await deliver(port);
    floor.push(outcome.ms);
    if (outcome.kind === '200') acknowledged.push(outcome.id);
  }
  floor.sort((a, b) => a - b);
  const floorP50 = percentile(floor, 50);
  console.log(
    `webhook intake, ${databaseUrl ? 'PostgreSQL' : 'PGlite'}, WEBHOOK_MAX_IN_FLIGHT=${values['max-in-flight'] ?? 'default'}, a new connection per delivery`,
  );
  console.log(`floor: p50 ${floorP50.toFixed(1)} ms, one delivery at a time to the idle server`);
  console.log(
    'rate/s  sent   200    503   other  reset   p50 ms (×floor)   p99 ms (×floor)  503 without Retry-After',
  );
  for (const rate of rates) {
    const outcomes = await atRate(port, rate);
    const countOf = (kind: Outcome['kind']) => outcomes.filter((o) => o.kind === kind).length;
    for (const o of outcomes) if (o.kind === '200') acknowledged.push(o.id);
    const answered = outcomes
      .filter((o) => o.kind !== 'reset')
      .map((o) => o.ms)
      .sort((a, b) => a - b);
    const p50 = percentile(answered, 50);
    const p99 = percentile(answered, 99);
    const noRetryAfter = outcomes.filter((o) => o.kind === '503' && !o.retryAfter).length;
    const codes = new Map<string, number>();
    for (const o of outcomes) {
      if (o.kind === 'reset') codes.set(o.code ?? 'other', (codes.get(o.code ?? 'other') ?? 0) + 1);
    }
    console.log(
      [
        String(rate).padStart(6),
        String(outcomes.length).padStart(5),
        String(countOf('200')).padStart(5),
        String(countOf('503')).padStart(6),
        String(countOf('other')).padStart(6),
        String(countOf('reset')).padStart(6),
        `${p50.toFixed(1).padStart(9)} (${(p50 / floorP50).toFixed(1)}×)`.padEnd(18),
        `${p99.toFixed(1).padStart(9)} (${(p99 / floorP50).toFixed(1)}×)`.padEnd(18),
        String(noRetryAfter).padStart(6),
        codes.size > 0 ? `  (${[...codes].map(([code, n]) => `${code} ${n}`).join(', ')})` : '',
      ].join(' '),
    );
  }

  serve.kill('SIGTERM');
  await new Promise((resolve) => serve.once('exit', resolve));
  const warehouse = await openWarehouse(
    databaseUrl ? { databaseUrl } : { pgliteDataDir: join(dir, 'pglite') },
  );
  const rows = await warehouse.db.selectFrom('webhook_events').select('event_key').execute();
  await warehouse.close();
  const stored = new Map<string, number>();
  for (const row of rows) stored.set(row.event_key, (stored.get(row.event_key) ?? 0) + 1);
  const missing = acknowledged.filter((id) => !stored.has(`social_post.boost_created:${id}`));
  const twice = [...stored.values()].filter((n) => n > 1).length;
  console.log(
    `exactly-once: ${acknowledged.length} acknowledged, ${rows.length} stored, ${missing.length} acknowledged but missing, ${twice} stored twice: ${missing.length === 0 && twice === 0 ? 'holds' : 'BROKEN'}`,
  );
  rmSync(dir, { recursive: true, force: true });
  if (missing.length > 0 || twice > 0) process.exitCode = 1;
}

await main();
