/**
 * One sync in a process of its own, so that its peak RSS is the sync's alone (the
 * sandbox serving it runs in another process). Prints one JSON line: the run's result
 * and the process's peak resident set and CPU seconds (the whole process, start to exit),
 * and of those the CPU seconds spent before the sync starts (`startupCpuSeconds`: Node's
 * start, loading the modules, opening and migrating the warehouse).
 *
 *   node bench/run-sync.ts '{"credentialsFile": "…", "databaseUrl": "…" | "pgliteDataDir": "…"}'
 *
 * With OTEL_EXPORTER_OTLP_ENDPOINT set it exports the run's spans, as the CLI does; the
 * wall time includes flushing them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Credential } from '../src/api/index.ts';
import { enableCompileCache } from '../src/cli/compile-cache.ts';
import { processEnvironment } from '../src/config/environment.ts';

// As the CLI starts (src/cli/main.ts): V8's compile cache on before the modules load.
enableCompileCache(processEnvironment());
const [
  { createApiClient },
  { DEFAULTS },
  { silentLogger },
  { runSync },
  { startTracing },
  { openWarehouse },
  { migrateToLatest },
  { warehousePoolSize },
] = await Promise.all([
  import('../src/api/client.ts'),
  import('../src/config/index.ts'),
  import('../src/log.ts'),
  import('../src/sync/run.ts'),
  import('../src/tracing.ts'),
  import('../src/warehouse/driver/connection.ts'),
  import('../src/warehouse/driver/migrate.ts'),
  import('../src/warehouse/driver/open.ts'),
]);

interface Args {
  credentialsFile: string;
  databaseUrl?: string;
  searchPath?: string;
  pgliteDataDir?: string;
  concurrency: number;
  accountConcurrency: number;
  /** Connections of the warehouse pool; by default what the CLI opens (`warehousePoolSize`). */
  poolSize?: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args & { warmOnly?: boolean };
// `{"warmOnly": true}`: the modules a first sync loads, the migrations too, and the compile
// cache written at exit; no sync.
if (args.warmOnly) {
  const migrations = new URL('../migrations/', import.meta.url);
  const names = readdirSync(migrations).filter((name) => name.endsWith('.ts'));
  for (const name of names.sort()) await import(new URL(name, migrations).href);
  process.exit(0);
}
const credentials = JSON.parse(readFileSync(args.credentialsFile, 'utf8')) as Credential[];
const warehouse = await openWarehouse(
  args.databaseUrl
    ? {
        databaseUrl: args.databaseUrl,
        poolSize: args.poolSize ?? warehousePoolSize(DEFAULTS),
        ...(args.searchPath ? { searchPath: args.searchPath } : {}),
      }
    : { pgliteDataDir: args.pgliteDataDir ?? './.data/bench' },
);
await migrateToLatest(warehouse.db);
// Traces as the CLI starts them (src/cli/program.ts): only when the environment asks.
const tracing = await startTracing(process.env, 'bench');
const api = createApiClient({
  concurrency: args.concurrency,
  accountConcurrency: args.accountConcurrency,
  logger: silentLogger(),
});
const startup = process.cpuUsage();
const started = performance.now();
const result = await runSync({
  warehouse,
  api,
  credentials,
  logger: silentLogger(),
  trigger: 'bench',
});
const wallSeconds = (performance.now() - started) / 1000;
await tracing?.shutdown();
await api.close();
await warehouse.close();
const cpu = process.cpuUsage();
process.stdout.write(
  `${JSON.stringify({
    status: result.status,
    wallSeconds,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    startupCpuSeconds: (startup.user + startup.system) / 1e6,
    stats: result.stats,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
  })}\n`,
);
