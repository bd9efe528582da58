/**
 * `npm start`: the product on one machine with nothing configured. A sandbox copy of the
 * upstream runs in-process on an ephemeral port, the demo's own embedded warehouse is
 * migrated, and the last 30 days are simulated (advance the sandbox clock a day, sync,
 * repeat), so history, rank trends and alerts exist. Then a summary, read back from the
 * warehouse, and `report.html`.
 *
 * Resuming: the warehouse itself says how far the demo got. Its first rank day is the
 * sandbox's start date, and its demo runs that finished (`sync_runs`) are the days synced
 * in full, one a day from that date. A second run starts the same sandbox (same seed,
 * same start date: the generated data is a function of seed, business and day) at the
 * day after the last one synced in full, and adds only the days since. A day whose run
 * was stopped (Ctrl-C) or killed is synced again: the businesses it had committed come
 * back unchanged and the others are written, so the day ends with the rows of a run that
 * was never stopped (docs/running.md). A resumed demo keeps the size it was built with
 * and ends on the last whole day; `--days` or `--businesses` that would shape another
 * demo are refused unless `--fresh` empties the warehouse first.
 *
 * Stopped (Ctrl-C, SIGTERM), it says so: the day it was stopped on, the days synced in
 * full, and what the warehouse holds; it writes no report (the report took most of the
 * stop's 5 s), so it ends about as soon as the day's run has stopped.
 */

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { LISTING_INACCURATE } from '../alerts/kinds/index.ts';
import { digestMessages } from '../alerts/messages.ts';
import { alertsOfRuns } from '../alerts/outbox.ts';
import { createConfiguredApiClient } from '../api/client.ts';
import type { ApiClient } from '../api/transport/state.ts';
import { addDays, daysBetween } from '../calendar-day.ts';
import { type Config, DEMO_PGLITE_DATA_DIR } from '../config/index.ts';
import { type Logger, redactUrl } from '../log.ts';
import { writeReport } from '../report/write-report.ts';
import { type RunningSandbox, startSandbox } from '../sandbox/server.ts';
import { ID_SPAN } from '../sandbox/world.ts';
import type { SyncProgress } from '../sync/options.ts';
import { startTerminalBar } from '../sync/progress.ts';
import { runSync, type SyncResult } from '../sync/run.ts';
import { UsageError } from '../usage-error.ts';
import type { Database } from '../warehouse/database.ts';
import { openWarehouse, type Warehouse } from '../warehouse/driver/connection.ts';
import { migrateToLatest } from '../warehouse/driver/migrate.ts';
import {
  createSchemaIfMissing,
  readDemoBusinessesPerAccount,
  readDemoRunDays,
  recreateCurrentSchema,
} from './progress.ts';
import { DEMO_ACCOUNTS, DEMO_BUSINESSES_PER_ACCOUNT, DEMO_DAYS } from './size.ts';
import {
  type AlertExample,
  type DemoCounts,
  readDemoCounts,
  readLatestInaccurateExamples,
  readListingStatusCounts,
} from './summary.ts';

const DEMO_SEED = 7;
/**
 * The demo's own embedded warehouse: sandbox data must never land in the warehouse a
 * real account syncs into (`DATABASE_URL`, or the default `./.data/pglite`).
 */
export const DEMO_DATA_DIR = DEMO_PGLITE_DATA_DIR;
/**
 * With `DATABASE_URL` set, the demo loads into this schema of that database, never into
 * the schema a real sync uses: psql, Metabase or Grafana can then read the demo's tables
 * and views (`set search_path to listings_demo`), which an embedded PGlite cannot offer.
 */
export const DEMO_SCHEMA = 'listings_demo';
/** `sync_runs.trigger` of the demo's runs: how a resumed demo counts the days it finished. */
const DEMO_TRIGGER = 'demo';

export interface DemoOptions {
  /**
   * Days simulated after the first sync (the month ends on `endDate`), DEMO_DAYS unset. A
   * resumed demo carries on to `endDate` whatever it is; given, it must be the span the
   * demo was built with (its first day `days` before `endDate`), or the demo is refused.
   */
  days?: number;
  accounts?: number;
  /**
   * The sandbox's businesses per account, DEMO_BUSINESSES_PER_ACCOUNT unset. A resumed
   * demo keeps the size it was built with; given and different, the demo is refused.
   */
  businessesPerAccount?: number;
  /** Empty the demo's warehouse first (`--fresh`): a new demo of `days` and `businessesPerAccount`. */
  fresh?: boolean;
  dataDir?: string;
  /** Load into this PostgreSQL (schema `schema`, `listings_demo` by default) instead of PGlite. */
  databaseUrl?: string;
  schema?: string;
  /** Where the report goes. */
  reportPath?: string;
  /**
   * The last simulated day, `YYYY-MM-DD`; by default the last whole UTC day before
   * `clock()` (yesterday), so that nothing the demo stores is dated after the clock.
   */
  endDate?: string;
  /** The wall clock (tests fix it); `new Date()` by default. */
  clock?: () => Date;
  /** The summary's lines (the command's standard output); none by default. */
  write?: (line: string) => void;
  /** A terminal to draw the days' progress bar on (the command's `io.terminal`); none: a log line per day. */
  terminal?: NodeJS.WriteStream;
  /** Stops the simulation between days (and the running sync between businesses). */
  signal?: AbortSignal;
  /** Each day's sync progress as it goes (tests stop a day part-way through with it). */
  onSyncProgress?: (day: string, progress: SyncProgress) => void;
  /**
   * An open warehouse to simulate into, in place of `dataDir` or `schema` (a test's own,
   * or the one a command run in-process is handed); left open at the end.
   */
  warehouse?: Warehouse;
  /**
   * Tests only: a migrated PGlite data directory (`dumpDataDir()`) to start a new `dataDir`
   * from, instead of initdb and the migrations; ignored when `dataDir` already holds one.
   */
  pgliteTemplate?: Blob;
}

/** What the demo prints: the warehouse's counts (`DemoCounts`), listings by status, two alerts. */
export interface DemoSummary extends DemoCounts {
  listingsByStatus: Record<string, number>;
  alertExamples: AlertExample[];
}

/** A demo stopped before its last day was synced in full. */
export interface DemoStop {
  /** What stopped it: the signal's reason (`SIGINT`, `SIGTERM`, `EPIPE`). */
  by: string;
  /** The day it was stopped on (not synced in full), and its place among this run's days. */
  day: string;
  dayNumber: number;
  daysToSync: number;
  /** Days this run synced in full before it. */
  daysInFull: number;
}

export interface DemoResult {
  daysSimulated: number;
  syncs: SyncResult[];
  summary: DemoSummary;
  /** Where the report goes; not written when the demo was stopped (`reportWritten`). */
  reportPath: string;
  reportWritten: boolean;
  startDate: string;
  endDate: string;
  /** Set when the demo was stopped before its last day was synced in full. */
  stopped?: DemoStop;
}

/** A demo's `--days` or `--businesses` that would shape another demo than the one stored. */
export class DemoOptionsConflictError extends UsageError {}

/**
 * The demo's schema in a PostgreSQL server: created when missing, and every connection's
 * search path, so the migrations and the sync write there and nowhere else.
 */
async function openDemoSchema(databaseUrl: string, schema: string): Promise<Warehouse> {
  const warehouse = await openWarehouse({ databaseUrl, searchPath: schema });
  try {
    await createSchemaIfMissing(warehouse.db, schema);
  } catch (error) {
    await warehouse.close();
    throw error;
  }
  return warehouse;
}

/**
 * How far the demo got: its first day (the warehouse's first rank day, the sandbox's start
 * date) and the last day synced in full, or null before the first day's run finished.
 * The demo syncs one day per run, in order from the first, and a run that finished
 * (`succeeded`, `partial` or `failed`: the demo went on to the next day after it) closed
 * its day; a run stopped part-way (`interrupted`) or killed (still `running`) did not, so
 * its day is synced again rather than kept with the businesses it had committed.
 */
async function simulatedDays(
  warehouse: Warehouse,
): Promise<{ first: string; lastComplete: string | null } | null> {
  const row = await readDemoRunDays(warehouse.db, DEMO_TRIGGER);
  if (!row?.first) return null;
  return {
    first: row.first,
    lastComplete: row.finished > 0 ? addDays(row.first, row.finished - 1) : null,
  };
}

/** The numbers the demo prints, read back from the warehouse. */
export async function readDemoSummary(db: import('kysely').Kysely<Database>): Promise<DemoSummary> {
  const counts = await readDemoCounts(db, LISTING_INACCURATE);
  const statuses = await readListingStatusCounts(db);
  const examples = await readLatestInaccurateExamples(db);
  return {
    ...(counts as DemoCounts),
    listingsByStatus: Object.fromEntries(statuses.map((s) => [s.status, s.n])),
    alertExamples: examples,
  };
}

const number = new Intl.NumberFormat('en-US');

/**
 * The summary's lines. Of a stopped demo (`stopped`), the heading names the days synced in
 * full, and the stopped day when it committed any business: the counts below hold them.
 */
export function renderDemoSummary(
  summary: DemoSummary,
  stopped?: { firstDay: string; lastInFull: string | null; partOf: string | null },
): string[] {
  const listings = Object.values(summary.listingsByStatus).reduce((a, b) => a + b, 0);
  const byStatus = Object.entries(summary.listingsByStatus)
    .map(([status, n]) => `${number.format(n)} ${status}`)
    .join(', ');
  const part = stopped?.partOf ? `, and part of ${stopped.partOf}` : '';
  const heading = !stopped
    ? `Warehouse after ${summary.firstDay ?? '–'} … ${summary.lastDay ?? '–'}:`
    : stopped.lastInFull
      ? `Warehouse after ${stopped.firstDay} … ${stopped.lastInFull}, the days synced in full${part}:`
      : `Warehouse with no day synced in full${part}:`;
  const lines = [
    heading,
    `  accounts           ${number.format(summary.accounts)}`,
    `  businesses         ${number.format(summary.businesses)} (${number.format(summary.archivedBusinesses)} archived upstream)`,
    `  listings           ${number.format(listings)}: ${byStatus || 'none'}`,
    `  reviews            ${number.format(summary.reviews)} (+ ${number.format(summary.socialItems)} social items)`,
    `  keywords tracked   ${number.format(summary.keywordsTracked)} (${number.format(summary.rankObservations)} rank observations)`,
    `  alerts raised      ${alertsLine(summary)}`,
  ];
  for (const a of summary.alertExamples) {
    lines.push(
      `    ${a.detectedOn}  ${a.businessName} (#${a.businessId}) on ${a.siteName}: ` +
        `${a.previousStatus ?? 'first seen'} → Inaccurate` +
        (a.wrongFields ? ` (${a.wrongFields} wrong)` : ''),
    );
  }
  return lines;
}

/**
 * The alerts, and how they make the report's "listings turned Inaccurate" figure: the
 * report counts each listing of a live business once, however often it turned, and
 * leaves out archived businesses (docs/running.md, "The demo").
 */
function alertsLine(summary: DemoSummary): string {
  const { alerts, turnedListings, turns, archivedAlerts } = summary;
  const listings = `${number.format(turnedListings)} listing${turnedListings === 1 ? '' : 's'}`;
  const times = turns === turnedListings ? '' : ` (${number.format(turns)} times)`;
  const archived = archivedAlerts
    ? `; ${number.format(archivedAlerts)} of archived businesses, which the report leaves out`
    : '';
  return (
    `${number.format(alerts)}, each a listing turned Inaccurate: ${listings} of live businesses${times}, ` +
    `the report's figure${archived}`
  );
}

/**
 * A bar over the simulated days on a terminal; otherwise log lines: `demo day started`
 * before each day's sync, `demo day synced` after it (after the sync's own lines), and
 * `demo day stopped` for a day whose run was stopped.
 */
function dayProgress(stream: NodeJS.WriteStream | undefined, logger: Logger, total: number) {
  if (stream?.isTTY && total > 0) {
    const bar = startTerminalBar(
      stream,
      'simulating [{bar}] {value}/{total} days | {day} | {alerts} new alerts',
    );
    bar.update(0, total, { day: '', alerts: 0 });
    return {
      started: (_number: number, _day: string) => {},
      day: (done: number, day: string, alerts: number) => bar.update(done, total, { day, alerts }),
      stopped: (_number: number, _day: string, _by: string) => {},
      stop: () => bar.stop(),
    };
  }
  return {
    started: (number: number, day: string) =>
      logger.info({ day, number, total }, 'demo day started'),
    day: (done: number, day: string, alerts: number) =>
      logger.info({ day, done, total, alerts }, 'demo day synced'),
    stopped: (number: number, day: string, by: string) =>
      logger.info({ day, number, total, signal: by }, 'demo day stopped'),
    stop: () => {},
  };
}

/** What stopped the demo, as its summary says it: ` by Ctrl-C (SIGINT)`; nothing for a stop of no name. */
function stopCause(by: string): string {
  if (by === 'SIGINT') return ' by Ctrl-C (SIGINT)';
  if (by === 'EPIPE') return ' by a closed pipe';
  return /^SIG[A-Z0-9]+$/.test(by) ? ` by ${by}` : '';
}

/** The command line that rebuilds the demo with the options given, for a refusal. */
function freshCommand(days: number | undefined, businesses: number | undefined): string {
  const given = [
    ...(days === undefined ? [] : [`--days ${days}`]),
    ...(businesses === undefined ? [] : [`--businesses ${businesses}`]),
  ];
  return `npm start -- --fresh ${given.join(' ')}`;
}

type Done = { first: string; lastComplete: string | null } | null;

/** The days this run syncs: resumed after the last day synced in full, or a new demo's. */
interface DemoPlan {
  done: Done;
  builtWith: number | null;
  startDate: string;
  firstToSync: string;
  toSimulate: number;
  lastToSync: string;
}

/**
 * How far the stored demo got, and the days this run syncs; options that would shape
 * another demo than the stored one are refused (DemoOptionsConflictError).
 */
async function planDemo(
  warehouse: Warehouse,
  options: DemoOptions,
  days: number,
  endDate: string,
  where: string,
): Promise<DemoPlan> {
  const done = await simulatedDays(warehouse);
  const builtWith = await readDemoBusinessesPerAccount(warehouse.db, ID_SPAN);
  // A stored demo is carried on as it was built: options that shape another are refused.
  const otherDays =
    options.days !== undefined && done !== null && addDays(endDate, -days) !== done.first;
  const otherSize =
    options.businessesPerAccount !== undefined &&
    builtWith !== null &&
    options.businessesPerAccount !== builtWith;
  if (otherDays || otherSize) {
    throw new DemoOptionsConflictError(
      `the demo in ${where} already holds ${done ? `the days from ${done.first}` : 'a demo'}` +
        `${builtWith === null ? '' : ` of ${builtWith} businesses per account`}; ` +
        `${[otherDays ? '--days' : '', otherSize ? '--businesses' : ''].filter(Boolean).join(' and ')} would make another. ` +
        `\`${freshCommand(options.days, options.businessesPerAccount)}\` rebuilds it so (the stored demo is deleted); ` +
        '`npm start` carries the stored one on to the last whole day.',
    );
  }
  // Resume after the last day synced in full, to the end date (the last whole day), or
  // begin `days` days before the end.
  const startDate = done?.first ?? addDays(endDate, -days);
  const firstToSync = done?.lastComplete ? addDays(done.lastComplete, 1) : startDate;
  const toSimulate = Math.max(0, daysBetween(firstToSync, endDate) + 1);
  const lastToSync = addDays(firstToSync, toSimulate - 1);
  return { done, builtWith, startDate, firstToSync, toSimulate, lastToSync };
}

/** What the demo says it will do: resume, nothing new, or a new month. */
function planLine({ done, startDate, toSimulate, lastToSync }: DemoPlan): string {
  return done?.lastComplete
    ? toSimulate
      ? `Resuming after ${done.lastComplete}, the last day synced in full: simulating ${toSimulate} more day(s) to ${lastToSync}.` +
        (toSimulate > DEMO_DAYS + 1 ? ' (`npm start -- --fresh` starts a new month instead.)' : '')
      : `Already simulated through ${done.lastComplete}; nothing new to sync.`
    : `Simulating ${startDate} to ${lastToSync} (${toSimulate} syncs): advance the sandbox a day, sync, repeat.`;
}

/** The simulated days' runs, and the stop when one was stopped before its last day. */
interface Simulation {
  syncs: SyncResult[];
  stop: DemoStop | undefined;
  seconds: number;
}

/**
 * The days simulated: advance the sandbox a day, sync, repeat, from the sandbox's current
 * day; stopped between days by the signal, or by a run stopped part-way.
 */
async function simulate(
  config: Config,
  logger: Logger,
  options: DemoOptions,
  run: { warehouse: Warehouse; api: ApiClient; sandbox: RunningSandbox; toSimulate: number },
): Promise<Simulation> {
  const { warehouse, api, sandbox: running, toSimulate } = run;
  const clock = options.clock ?? (() => new Date());
  const stopped = () => options.signal?.aborted === true;
  // The sync's clock follows the sandbox: each day is synced at its last instant (its
  // UTC date keys ranks and history), after everything the sandbox dates on that day and
  // never after the wall clock, so no alert or run is stamped ahead of `clock()`.
  const now = () => {
    const endOfDay = new Date(`${running.today()}T23:59:59.999Z`);
    const wall = clock();
    return endOfDay < wall ? endOfDay : wall;
  };
  const progress = dayProgress(options.terminal, logger, toSimulate);
  // Under the bar, each run's 'sync started/finished' lines would tear it: warnings only.
  const syncLogger = options.terminal?.isTTY ? logger.child({}, { level: 'warn' }) : logger;
  const syncs: SyncResult[] = [];
  let alerts = 0;
  let stop: DemoStop | undefined;
  const started = performance.now();
  try {
    for (let i = 0; i < toSimulate; i++) {
      if (i > 0) running.advanceDays(1);
      const day = running.today();
      const stoppedHere = () => ({
        by: String(options.signal?.reason ?? 'abort'),
        day,
        dayNumber: i + 1,
        daysToSync: toSimulate,
        daysInFull: syncs.filter((s) => s.status !== 'interrupted').length,
      });
      if (stopped()) {
        stop = stoppedHere();
        break;
      }
      progress.started(i + 1, day);
      const result = await runSync({
        warehouse,
        api,
        credentials: running.credentials,
        logger: syncLogger,
        trigger: DEMO_TRIGGER,
        now,
        // SYNC_ACCOUNT_CONCURRENCY and SYNC_CONCURRENCY apply to the demo's syncs too.
        businessConcurrency: config.syncAccountConcurrency,
        overallBusinessConcurrency: config.syncConcurrency,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onSyncProgress
          ? {
              onProgress: (progress: SyncProgress) =>
                options.onSyncProgress?.(running.today(), progress),
            }
          : {}),
      });
      alerts += result.stats.alerts;
      // A run stopped part-way did not sync its day: that day is synced again next time.
      if (result.status === 'interrupted') {
        stop = stoppedHere();
        syncs.push(result);
        progress.stopped(i + 1, day, stop.by);
        break;
      }
      syncs.push(result);
      progress.day(i + 1, day, alerts);
    }
  } finally {
    progress.stop();
  }
  return { syncs, stop, seconds: (performance.now() - started) / 1000 };
}

/** A stopped demo's end: the summary of what the warehouse holds, and no report. */
function endStopped(
  out: (line: string) => void,
  options: DemoOptions,
  plan: DemoPlan,
  endDate: string,
  { syncs, stop }: Simulation & { stop: DemoStop },
  summary: DemoSummary,
  partOf: string | null,
): DemoResult {
  const { done, startDate, firstToSync, lastToSync } = plan;
  const lastInFull = stop.daysInFull
    ? addDays(firstToSync, stop.daysInFull - 1)
    : (done?.lastComplete ?? null);
  out('');
  for (const line of renderDemoSummary(summary, { firstDay: startDate, lastInFull, partOf }))
    out(line);
  out('');
  out(
    `No report written: the demo was stopped. Run \`npm start\` again to carry on to ${lastToSync}; it writes ${options.reportPath ?? 'report.html'}.`,
  );
  return {
    daysSimulated: stop.daysInFull,
    syncs,
    summary,
    reportPath: options.reportPath ?? 'report.html',
    reportWritten: false,
    startDate,
    endDate,
    stopped: stop,
  };
}

/** A finished demo's end: the report, the summary, and how to read it again or go on. */
async function endWithReport(
  out: (line: string) => void,
  warehouse: Warehouse,
  options: DemoOptions,
  place: { databaseUrl: string | undefined; schema: string },
  summary: DemoSummary,
): Promise<string> {
  const { databaseUrl, schema } = place;
  const report = await writeReport(warehouse.db, {
    out: options.reportPath ?? 'report.html',
    days: 90,
  });
  out('');
  for (const line of renderDemoSummary(summary)) out(line);
  out('');
  out(`Report: ${report.path}  (open it in a browser; it needs no network)`);
  if (databaseUrl) {
    for (const line of readAgainLines(databaseUrl, schema)) out(line);
    out(
      `BI: connect to ${redactUrl(databaseUrl)} and \`set search_path to ${schema}\` ` +
        '(views: docs/warehouse.md, "Views"). Run `npm start` again to add the days since.',
    );
  } else {
    out(
      'Warehouse views for BI: docs/warehouse.md, "Views". Run `npm start` again to add the days since.',
    );
    out(
      `(PGlite serves this process only: set DATABASE_URL to load the demo into PostgreSQL, schema ${schema}, for psql, Metabase or Grafana.)`,
    );
  }
  // Alert digests (src/alerts): the count of Slack digest messages the demo's alerts
  // would make goes here, once that module exposes it.
  out('');
  out('Next, against a real account:');
  out(
    '  export LISTINGS_BASE_URL=https://… LISTINGS_AUTH_TOKEN=… LISTINGS_USER_EMAIL=you@example.com',
  );
  out('  npx listings-sync migrate && npx listings-sync sync && npx listings-sync report');
  return report.path;
}

/** The demo as a function: the CLI uses the defaults, tests shrink it. */
export async function runDemo(
  config: Config,
  logger: Logger,
  options: DemoOptions = {},
): Promise<DemoResult> {
  const out = options.write ?? (() => {});
  const days = options.days ?? DEMO_DAYS;
  const clock = options.clock ?? (() => new Date());
  // Not today: the sandbox dates today's reviews at any time of the day, ahead of the clock.
  const endDate = options.endDate ?? addDays(clock().toISOString().slice(0, 10), -1);
  const dataDir = options.dataDir ?? DEMO_DATA_DIR;
  const databaseUrl = options.databaseUrl ?? config.databaseUrl;
  // Always its own schema, never DATABASE_SCHEMA: that names the user's warehouse, and a
  // demo must not pour sandbox businesses into it (docs/configuration.md).
  const schema = options.schema ?? DEMO_SCHEMA;

  const warehouse = options.warehouse
    ? options.warehouse
    : databaseUrl
      ? await openDemoSchema(databaseUrl, schema)
      : await openWarehouse({
          pgliteDataDir: dataDir,
          loadDataDir: existsSync(join(dataDir, 'PG_VERSION')) ? undefined : options.pgliteTemplate,
        });
  const where = databaseUrl
    ? `PostgreSQL at ${redactUrl(databaseUrl)}, schema ${schema}`
    : `embedded PGlite in ${dataDir}`;
  const api = createConfiguredApiClient(config, logger);
  let sandbox: RunningSandbox | undefined;
  try {
    // --fresh: the demo's schema emptied, so what is stored below is a new demo's.
    if (options.fresh) await recreateCurrentSchema(warehouse.db);
    const { applied } = await migrateToLatest(warehouse.db);
    const plan = await planDemo(warehouse, options, days, endDate, where);
    const { startDate, firstToSync, toSimulate } = plan;

    sandbox = await startSandbox({
      seed: DEMO_SEED,
      accounts: options.accounts ?? DEMO_ACCOUNTS,
      businessesPerAccount:
        options.businessesPerAccount ?? plan.builtWith ?? DEMO_BUSINESSES_PER_ACCOUNT,
      startDate,
      port: 0,
    });
    out(`Sandbox of the upstream API (seed ${DEMO_SEED}, from ${startDate}) at ${sandbox.baseUrl}`);
    out(
      `Warehouse: ${where}${options.fresh ? ', emptied (--fresh)' : ''}` +
        `${applied.length ? ` (${applied.length} migration(s) applied)` : ''}`,
    );
    out(planLine(plan));

    sandbox.advanceDays(daysBetween(startDate, firstToSync));
    const simulation = await simulate(config, logger, options, {
      warehouse,
      api,
      sandbox,
      toSimulate,
    });
    const { syncs, stop, seconds } = simulation;
    const partOf = stop && (syncs.at(-1)?.stats.businesses.synced ?? 0) > 0 ? stop.day : null;
    if (stop) {
      const inFull = stop.daysInFull;
      out(
        `Stopped${stopCause(stop.by)} on ${stop.day}, day ${stop.dayNumber} of the ${stop.daysToSync} to sync: ` +
          `${inFull} day(s) synced in full${inFull ? ` (${firstToSync} … ${addDays(firstToSync, inFull - 1)})` : ''} ` +
          `in ${seconds.toFixed(0)}s; ${stop.day} is synced again when the demo is run again` +
          `${partOf ? ' (its businesses committed so far come back unchanged)' : ''}.`,
      );
    } else if (toSimulate) out(`${syncs.length} day(s) synced in ${seconds.toFixed(0)}s.`);
    const digests = digestMessages(
      await alertsOfRuns(
        warehouse.db,
        syncs.map((s) => s.runId),
      ),
    );
    if (toSimulate)
      out(`Slack would get ${digests.length} message(s): one digest per account and day.`);

    const summary = await readDemoSummary(warehouse.db);
    if (stop)
      return endStopped(out, options, plan, endDate, { ...simulation, stop }, summary, partOf);
    const reportPath = await endWithReport(
      out,
      warehouse,
      options,
      { databaseUrl, schema },
      summary,
    );
    return {
      daysSimulated: syncs.length,
      syncs,
      summary,
      reportPath,
      reportWritten: true,
      startDate,
      endDate,
    };
  } finally {
    await api.close();
    if (!options.warehouse) await warehouse.close();
    await sandbox?.close();
  }
}

/**
 * The command line that reads a PostgreSQL demo again (docs/configuration.md,
 * DATABASE_SCHEMA): the URL as `redactUrl` prints it, so a password is never printed and
 * is named as the one thing to put back.
 */
export function readAgainLines(databaseUrl: string, schema: string): string[] {
  const shown = redactUrl(databaseUrl);
  const hasPassword = URL.parse(databaseUrl)?.password;
  return [
    'Read it again with:',
    `  DATABASE_URL='${shown}' DATABASE_SCHEMA=${schema} npx listings-sync report`,
    ...(hasPassword ? ['  (with your password in place of [REDACTED])'] : []),
  ];
}
