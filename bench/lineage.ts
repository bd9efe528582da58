/**
 * What lineage costs a sync (docs/benchmarks.md, "Lineage"): first syncs of the same
 * sandbox world into fresh in-memory PGlite warehouses, alternately without lineage and
 * with OPENLINEAGE_URL pointed at a receiver in this process (every event taken, 201).
 * Prints per pair the run's CPU (this process: the sync, PGlite, the receiver; the sandbox
 * runs in a process of its own), and the CPU spent building and handing over the events
 * (`lineageCpu`, src/lineage/emit.ts), as a share of the run.
 *
 *   npm run bench:lineage -- [--businesses 200] [--pairs 3]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createApiClient } from '../src/api/client.ts';
import type { Credential } from '../src/api/index.ts';
import { lineageCpu } from '../src/lineage/emit.ts';
import { withLineage } from '../src/lineage/run.ts';
import { lineageSettings } from '../src/lineage/settings.ts';
import { silentLogger } from '../src/log.ts';
import { runSync } from '../src/sync/run.ts';
import { openWarehouse } from '../src/warehouse/driver/connection.ts';
import { migrateToLatest } from '../src/warehouse/driver/migrate.ts';

const { values } = parseArgs({
  options: {
    businesses: { type: 'string', default: '200' },
    pairs: { type: 'string', default: '3' },
  },
});
const BUSINESSES = Number(values.businesses);
const PAIRS = Number(values.pairs);
const CLI = join(import.meta.dirname, '../src/cli/main.ts');

async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function startSandbox(
  dir: string,
): Promise<{ child: ChildProcess; credentials: Credential[] }> {
  const credentialsFile = join(dir, 'credentials.json');
  const child = spawn(
    process.execPath,
    [
      CLI,
      'sandbox',
      '--port',
      String(await freePort()),
      '--seed',
      '42',
      '--accounts',
      '2',
      '--businesses',
      String(BUSINESSES / 2),
      '--credentials-out',
      credentialsFile,
    ],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn' },
    },
  );
  for (let i = 0; i < 2400 && !existsSync(credentialsFile); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 200));
  return { child, credentials: JSON.parse(readFileSync(credentialsFile, 'utf8')) as Credential[] };
}

let events = 0;
const receiver = http.createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    events += 1;
    response.writeHead(201).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

const dir = mkdtempSync(join(tmpdir(), 'bench-lineage-'));
const sandbox = await startSandbox(dir);
const settings = lineageSettings({ OPENLINEAGE_URL: receiverUrl }, 'bench');

async function oneSync(lineage: boolean) {
  const warehouse = await openWarehouse({ memory: true });
  await migrateToLatest(warehouse.db);
  const api = createApiClient({ logger: silentLogger() });
  const eventsBefore = events;
  const lineageBefore = lineageCpu.micros;
  const before = process.cpuUsage();
  const started = performance.now();
  const result = await withLineage(lineage ? settings : undefined, () =>
    runSync({
      warehouse,
      api,
      credentials: sandbox.credentials,
      logger: silentLogger(),
      trigger: 'bench',
    }),
  );
  const cpu = process.cpuUsage(before);
  const wall = (performance.now() - started) / 1000;
  await api.close();
  await warehouse.close();
  return {
    lineage,
    status: result.status,
    wallSeconds: Number(wall.toFixed(2)),
    cpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(3)),
    lineageCpuSeconds: Number(((lineageCpu.micros - lineageBefore) / 1e6).toFixed(4)),
    events: events - eventsBefore,
  };
}

try {
  // Unmeasured: loads every module and warms the sandbox's answers.
  await oneSync(true);
  const rows = [];
  for (let pair = 0; pair < PAIRS; pair++) {
    for (const lineage of pair % 2 === 0 ? [false, true] : [true, false]) {
      const row = await oneSync(lineage);
      rows.push(row);
      process.stdout.write(`${JSON.stringify(row)}\n`);
    }
  }
  const on = rows.filter((r) => r.lineage);
  const off = rows.filter((r) => !r.lineage);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const onCpu = mean(on.map((r) => r.cpuSeconds));
  const offCpu = mean(off.map((r) => r.cpuSeconds));
  const built = mean(on.map((r) => r.lineageCpuSeconds));
  process.stdout.write(
    `${JSON.stringify({
      businesses: BUSINESSES,
      pairs: PAIRS,
      cpuOff: Number(offCpu.toFixed(3)),
      cpuOn: Number(onCpu.toFixed(3)),
      onOverOff: Number((onCpu / offCpu).toFixed(3)),
      lineageCpuSeconds: Number(built.toFixed(4)),
      lineageShare: `${((100 * built) / onCpu).toFixed(2)} %`,
      eventsPerRun: on[0]?.events,
    })}\n`,
  );
} finally {
  sandbox.child.kill('SIGTERM');
  receiver.close();
  rmSync(dir, { recursive: true, force: true });
}
