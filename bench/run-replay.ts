/**
 * One replay in a process of its own, like `bench/run-sync.ts` for a sync, so that its
 * peak RSS is the replay's alone: `replay()` (src/replay/replay.ts) of every kept run of the
 * warehouse into a fresh schema. Prints one JSON line: wall seconds of the replay, the
 * process's CPU seconds and peak resident set (the whole process, start to exit), and the
 * replay's counts.
 *
 *   node bench/run-replay.ts '{"into": "…", "databaseUrl": "…", "searchPath": "…" | "pgliteDataDir": "…"}'
 *
 * `sampleMemoryMs` also samples `process.memoryUsage()` that often and prints each part's
 * peak (V8 heap used and total, external, array buffers, RSS), to tell what a peak is made of.
 */
import { DEFAULTS } from '../src/config/index.ts';
import { silentLogger } from '../src/log.ts';
import { replay } from '../src/replay/replay.ts';
import { openWarehouse } from '../src/warehouse/driver/connection.ts';
import { warehousePoolSize } from '../src/warehouse/driver/open.ts';

interface Args {
  /** The fresh schema to build (it must not hold tables). */
  into: string;
  databaseUrl?: string;
  /** The live schema, whose raw zone is replayed. */
  searchPath?: string;
  pgliteDataDir?: string;
  /** Connections of the live warehouse's pool; by default what the CLI opens. */
  poolSize?: number;
  sampleMemoryMs?: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args;
if (!args.into) throw new Error('run-replay: "into" (the fresh schema) is required');

const mb = (bytes: number) => bytes / 1024 / 1024;
const peaks = { rss: 0, heapUsed: 0, heapTotal: 0, external: 0, arrayBuffers: 0 };
const sample = () => {
  const m = process.memoryUsage();
  for (const key of Object.keys(peaks) as (keyof typeof peaks)[]) {
    peaks[key] = Math.max(peaks[key], m[key]);
  }
};
const sampler = args.sampleMemoryMs ? setInterval(sample, args.sampleMemoryMs) : undefined;

// The live warehouse as `listings-sync replay` opens it (openConfiguredWarehouse).
const warehouse = await openWarehouse(
  args.databaseUrl
    ? {
        databaseUrl: args.databaseUrl,
        poolSize: args.poolSize ?? warehousePoolSize(DEFAULTS),
        ...(args.searchPath ? { searchPath: args.searchPath } : {}),
      }
    : { pgliteDataDir: args.pgliteDataDir ?? './.data/bench' },
);
const startup = process.cpuUsage();
const started = performance.now();
let result: Awaited<ReturnType<typeof replay>>;
try {
  result = await replay({
    warehouse,
    ...(args.databaseUrl ? { databaseUrl: args.databaseUrl } : {}),
    into: args.into,
    logger: silentLogger(),
  });
} finally {
  await warehouse.close();
}
const wallSeconds = (performance.now() - started) / 1000;
if (sampler) {
  clearInterval(sampler);
  sample();
}
const cpu = process.cpuUsage();
process.stdout.write(
  `${JSON.stringify({
    wallSeconds,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    startupCpuSeconds: (startup.user + startup.system) / 1e6,
    runs: result.runs,
    reads: result.reads,
    recovered: result.recovered,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    ...(sampler
      ? {
          sampledPeaksMb: Object.fromEntries(
            Object.entries(peaks).map(([k, v]) => [k, Math.round(mb(v) * 10) / 10]),
          ),
        }
      : {}),
  })}\n`,
);
