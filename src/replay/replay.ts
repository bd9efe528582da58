/**
 * `listings-sync replay`: the warehouse rebuilt from its raw zone (docs/replay.md,
 * "Replay into a fresh schema"). Today's schemas and writers run over the kept bodies, run by run in their
 * original order, each business at the observation time it was kept with, into a fresh
 * schema of the same database. The sync code is the live one: only its transport is
 * different (an undici mock pool that answers each request with the body kept for it),
 * and its clock: each business is written at the observation time its reads were kept with
 * (so businesses replay side by side, as the live sync runs them), the credential's own
 * steps at the latest kept read's.
 *
 * Alerts are recomputed into the new schema's `alerts` table and never delivered: no
 * sink runs here. A record quarantined on a night that now loads has its quarantine row
 * copied into the new schema with `recovered_at` set.
 */
import type { Kysely } from 'kysely';
import { MockAgent } from 'undici';
import type { AlertRules } from '../alerts/rules.ts';
import { type AnswerSettings, createApiClient } from '../api/client.ts';
import type { Credential } from '../api/index.ts';
import { ListingsSyncError } from '../errors.ts';
import type { Logger } from '../log.ts';
import {
  businessIdOfPath,
  decompressBody,
  requestKey,
  SECRET_PARAMS,
  unreadableBodyReason,
} from '../raw/body.ts';
import { replayRule } from '../streams/index.ts';
import { runSync, STREAMS, type Stream } from '../sync/run.ts';
import { parseShard } from '../sync/shard.ts';
import { errorText } from '../sync/stats.ts';
import type { Database } from '../warehouse/database.ts';
import { openWarehouse, type Warehouse } from '../warehouse/driver/connection.ts';
import { migrateToLatest } from '../warehouse/driver/migrate.ts';
import {
  accountReadsOfRun,
  accountsOfRun,
  businessReadsOfRun,
  businessTimesOfRun,
  copyRecoveredQuarantine,
  countReadsOfRun,
  createSchema,
  currentSchema,
  type KeptReadRow,
  type KeptRun,
  keptAccounts,
  keptBodiesOf,
  keptBody,
  keptReadSpan,
  keptRuns,
  type StoredBody,
  setSearchPath,
  tablesInSchema,
} from './reads.ts';

export interface ReplayOptions {
  /** The live warehouse: its raw zone is read, nothing in it is written. */
  warehouse: Warehouse;
  /** PostgreSQL: the live warehouse's URL, to open the new schema beside it. */
  databaseUrl?: string;
  /** The fresh schema to build (created; must not hold tables yet). */
  into: string;
  /** Observation dates, `YYYY-MM-DD`, inclusive (UTC). */
  from?: string;
  to?: string;
  account?: string;
  businessId?: number;
  alertRules?: AlertRules;
  /** Keep the replayed answers in the new schema's raw zone too. */
  keepRaw?: boolean;
  /**
   * Businesses not replayed (`--in-place` keeps them as they are): none of their reads is
   * served, and the replayed sync leaves them out like a business its run never committed.
   */
  skipBusinesses?: ReadonlySet<number>;
  /** A business whose write failed in the replay (its transaction rolled back). */
  onBusinessError?: (businessId: number, error: unknown) => void;
  /** Runs on the new schema once it is migrated, before the first run is replayed. */
  prepare?: (target: Kysely<Database>) => Promise<void>;
  logger: Logger;
  onProgress?: (progress: ReplayProgress) => void;
}

export interface ReplayProgress {
  runsDone: number;
  runsTotal: number;
  /** The observation date of the run just replayed. */
  day: string;
}

/** A business-night the replay could not rebuild: its rows of that night are not in the schema built. */
export interface NotRebuilt {
  /** The night (UTC date of the business's observation time). */
  night: string;
  businessId: number;
  account: string;
  /** The kept run it was read by. */
  runId: string;
  reason: string;
}

export interface ReplayResult {
  /** Every business-night the replay could not rebuild, by night and business (docs/replay.md). */
  notRebuilt: NotRebuilt[];
  runs: number;
  reads: number;
  recovered: number;
  seconds: number;
  /** Each run the replay made (one per kept run and credential) → the kept run it replayed. */
  runIds: Map<string, string>;
}

/** A range or filter the raw zone has nothing for; the message says what it does hold. */
export class ReplayCoverageError extends ListingsSyncError {
  readonly code = 'RAW_ZONE_GAP';
}

export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Businesses replayed at once, per credential: the live sync's default. */
const REPLAY_CONCURRENCY = 8;

/** A status no upstream sends: a request the raw zone has no answer for fails like an outage. */
const NOT_KEPT_STATUS = 599;

interface KeptAnswer {
  status: number;
  /** The body's address in raw_bodies: fetched when asked for. */
  hash: string;
  observedAt: Date;
}

export async function replay(options: ReplayOptions): Promise<ReplayResult> {
  const started = performance.now();
  const { warehouse, into, logger } = options;
  if (!SCHEMA_NAME.test(into)) {
    throw new Error(
      `--into must be a plain lower-case schema name (letters, digits, _), got "${into}".`,
    );
  }
  for (const [flag, value] of [
    ['--from', options.from],
    ['--to', options.to],
  ] as const) {
    if (value !== undefined && !DATE.test(value))
      throw new Error(`${flag} must be a date, YYYY-MM-DD (got "${value}").`);
  }
  const source = await currentSchema(warehouse.db);
  if (source === into) throw new Error(`--into names the live schema "${into}"; pick a new one.`);
  const raw = warehouse.db.withSchema(source);

  const runs = await keptRuns(raw, {
    ...(options.from !== undefined ? { from: dayStart(options.from) } : {}),
    ...(options.to !== undefined ? { before: dayAfter(options.to) } : {}),
    ...(options.account !== undefined ? { account: options.account } : {}),
    ...(options.businessId !== undefined ? { businessId: options.businessId } : {}),
  });
  await checkCoverage(raw, options, runs.length);

  if ((await tablesInSchema(warehouse.db, into)) > 0) {
    throw new Error(
      `Schema "${into}" already holds tables; replay builds into a fresh schema. Drop it or name another.`,
    );
  }
  await createSchema(warehouse.db, into);
  const target = await openTarget(warehouse, into, options.databaseUrl);
  let reads = 0;
  let recovered = 0;
  const runIds = new Map<string, string>();
  const notRebuilt: NotRebuilt[] = [];
  try {
    await migrateToLatest(target.db);
    await options.prepare?.(target.db);
    const accounts = await keptAccounts(raw);
    const accountByName = new Map(accounts.map((a) => [a.name, a]));
    for (const [index, run] of runs.entries()) {
      const names = await accountsOfRun(raw, run.run_id, options.account);
      for (const name of names) {
        const account = accountByName.get(name);
        if (!account) continue;
        const replayed = await replayAccountRun(target, raw, run, account, options);
        reads += replayed.reads;
        runIds.set(replayed.runId, run.run_id);
        notRebuilt.push(...replayed.notRebuilt);
      }
      options.onProgress?.({
        runsDone: index + 1,
        runsTotal: runs.length,
        day: run.first_observed.toISOString().slice(0, 10),
      });
    }
    recovered = await copyRecoveredQuarantine(
      target.db,
      source,
      runs.map((r) => r.run_id),
    );
  } finally {
    await target.close();
  }
  const seconds = Math.round((performance.now() - started) / 10) / 100;
  notRebuilt.sort((a, b) =>
    a.night === b.night ? a.businessId - b.businessId : a.night < b.night ? -1 : 1,
  );
  for (const missing of notRebuilt) {
    logger.error(
      { ...missing },
      `replay: business ${missing.businessId}'s night ${missing.night} was not rebuilt: ${missing.reason}`,
    );
  }
  logger.info(
    { into, runs: runs.length, reads, recovered, seconds, notRebuilt: notRebuilt.length },
    'replay finished',
  );
  return { runs: runs.length, reads, recovered, seconds, runIds, notRebuilt };
}

// Replay in place (src/replay/in-place.ts) names the live schema with it too.
export { currentSchema };

function dayStart(day: string): Date {
  return new Date(`${day}T00:00:00Z`);
}

function dayAfter(day: string): Date {
  return new Date(dayStart(day).getTime() + 86_400_000);
}

/** Refuses a range the raw zone does not cover, naming what it does cover. */
async function checkCoverage(
  raw: Kysely<Database>,
  options: ReplayOptions,
  runs: number,
): Promise<void> {
  const { first, last } = await keptReadSpan(raw);
  const held =
    first && last
      ? `it holds reads from ${first.toISOString().slice(0, 10)} to ${last.toISOString().slice(0, 10)}`
      : 'it holds no reads at all (syncs keep them from migration 0011 on)';
  if (!first || !last) throw new ReplayCoverageError(`The raw zone cannot replay this: ${held}.`);
  if (options.from && dayStart(options.from) < dayStart(first.toISOString().slice(0, 10))) {
    throw new ReplayCoverageError(`The raw zone does not cover --from ${options.from}: ${held}.`);
  }
  if (options.to && dayAfter(options.to) > dayAfter(last.toISOString().slice(0, 10))) {
    throw new ReplayCoverageError(`The raw zone does not cover --to ${options.to}: ${held}.`);
  }
  if (runs === 0) {
    const filters = [
      options.account !== undefined && `account ${options.account}`,
      options.businessId !== undefined && `business ${options.businessId}`,
    ].filter(Boolean);
    throw new ReplayCoverageError(
      `The raw zone has no reads${filters.length ? ` of ${filters.join(' and ')}` : ''} in the range asked; ${held}.`,
    );
  }
}

/**
 * The new schema, on its own connections: PostgreSQL opens a pool with that search path;
 * PGlite has one connection, whose search path is moved there and back on close.
 */
async function openTarget(
  warehouse: Warehouse,
  schema: string,
  databaseUrl: string | undefined,
): Promise<Warehouse> {
  if (warehouse.kind === 'postgres') {
    if (!databaseUrl) throw new Error('Replay on PostgreSQL needs the database URL.');
    return openWarehouse({ databaseUrl, searchPath: schema });
  }
  const source = await currentSchema(warehouse.db);
  await setSearchPath(warehouse.db, schema);
  return {
    db: warehouse.db,
    kind: 'pglite',
    close: async () => {
      await setSearchPath(warehouse.db, source);
    },
  };
}

/** Businesses whose read index is held at once: more than the replay writes side by side. */
const BUSINESSES_INDEXED = 4 * REPLAY_CONCURRENCY;

/** Retried reads: the last attempt is the answer the sync went on with (rows in read order). */
function indexAnswers(rows: readonly KeptReadRow[]): {
  answers: Map<string, KeptAnswer>;
  operations: Set<string>;
} {
  const answers = new Map<string, KeptAnswer>();
  const operations = new Set<string>();
  for (const row of rows) {
    operations.add(row.operation);
    answers.set(row.request, {
      status: row.status,
      hash: row.body_hash,
      observedAt: new Date(row.observed_at),
    });
  }
  return { answers, operations };
}

/** Decompressed bodies held at once: the reads of a few businesses, whatever the night's size. */
const BODY_CACHE_ENTRIES = 64;

/**
 * The kept bodies, fetched when a request asks for one and decompressed then: memory
 * holds the run's index (request → body hash) and a few bodies, never the night. A
 * business's bodies come in one statement when its reads are indexed (`prefetched`, its
 * compressed bytes and its deltas' bases, dropped once served); a body not among them is
 * fetched alone.
 */
function keptBodies(
  raw: Kysely<Database>,
): (hash: string, prefetched?: Map<string, StoredBody>) => Promise<string> {
  const cache = new Map<string, string>();
  const textOf = async (hash: string, prefetched?: Map<string, StoredBody>): Promise<string> => {
    const hit = cache.get(hash);
    if (hit !== undefined) return hit;
    const held = prefetched?.get(hash);
    prefetched?.delete(hash);
    const row = held ?? (await keptBody(raw, hash));
    // A delta's base is a body kept whole (migration 0032): one step, cached like any body.
    const base = row.base_hash === null ? undefined : await textOf(row.base_hash, prefetched);
    const text = decompressBody(row.encoding, row.bytes, base);
    if (cache.size >= BODY_CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
    cache.set(hash, text);
    return text;
  };
  return textOf;
}

/** The bounds and body limit a run recorded (migration 0015); the defaults before it. */
export function recordedAnswerSettings(settings: unknown): Partial<AnswerSettings> {
  if (!settings || typeof settings !== 'object') return {};
  const { bounds, maxBodyBytes } = settings as Partial<AnswerSettings>;
  return {
    ...(bounds && typeof bounds === 'object' ? { bounds } : {}),
    ...(typeof maxBodyBytes === 'number' ? { maxBodyBytes } : {}),
  };
}

/** A business's read index and its bodies, compressed, fetched in one statement each. */
interface BusinessIndex {
  answers: Map<string, KeptAnswer>;
  bodies: Map<string, StoredBody>;
}

/** The kept answer to one request, with the bodies prefetched for its business. */
type AnswerFor = (
  path: string,
  key: string,
) => Promise<{ answer: KeptAnswer; bodies?: Map<string, StoredBody> } | undefined>;

/** What one credential's part of a kept run answers from. */
interface KeptRunAnswers {
  /** Each business the run committed, and the time its reads (and rows) were kept with. */
  businessTimes: Map<number, Date>;
  /** The kept reads the replay serves from. */
  reads: number;
  /** Reference data is read once a run, by one credential: the others have none to replay. */
  fetchedReference: boolean;
  answerFor: AnswerFor;
}

/**
 * What the run read of the credential itself (its list, reference data, polls): a few
 * reads, indexed up front. A business's reads are indexed when the replayed sync first
 * asks for one of them (`businessIndexer`), a few businesses at a time: memory holds
 * neither the night's bodies nor its index. A read of a business that never committed
 * on the night is not an answer its replay may write from.
 */
async function keptRunAnswers(
  raw: Kysely<Database>,
  run: KeptRun,
  accountName: string,
  options: ReplayOptions,
): Promise<KeptRunAnswers> {
  const ofRun = { runId: run.run_id, accountName };
  const accountAnswers = indexAnswers(await accountReadsOfRun(raw, ofRun));
  const businessTimes = new Map<number, Date>();
  const onlyBusiness = options.businessId !== undefined ? { businessId: options.businessId } : {};
  for (const { businessId, at } of await businessTimesOfRun(raw, { ...ofRun, ...onlyBusiness })) {
    if (!options.skipBusinesses?.has(businessId)) businessTimes.set(businessId, at);
  }
  const reads = await countReadsOfRun(raw, { ...ofRun, ...onlyBusiness });
  const businessAnswers = businessIndexer(raw, run, accountName);
  const answerFor: AnswerFor = async (path, key) => {
    const id = businessIdOfPath(path);
    if (id === null) {
      const answer = accountAnswers.answers.get(key);
      return answer ? { answer } : undefined;
    }
    if (!businessTimes.has(id)) return undefined;
    const index = await businessAnswers(id);
    const answer = index.answers.get(key);
    return answer ? { answer, bodies: index.bodies } : undefined;
  };
  return {
    businessTimes,
    reads,
    fetchedReference: accountAnswers.operations.has('list_countries'),
    answerFor,
  };
}

/**
 * A business's kept reads of the run, indexed when the replayed sync first asks for one
 * of them: at most `BUSINESSES_INDEXED` indexes are held, the first indexed let go first.
 */
function businessIndexer(
  raw: Kysely<Database>,
  run: KeptRun,
  accountName: string,
): (id: number) => Promise<BusinessIndex> {
  const indexed = new Map<number, Promise<BusinessIndex>>();
  return (id) => {
    const hit = indexed.get(id);
    if (hit) return hit;
    const loading = businessReadsOfRun(raw, {
      runId: run.run_id,
      accountName,
      businessId: id,
      first: run.first_observed,
      last: run.last_observed,
    }).then(async (rows) => {
      const { answers } = indexAnswers(rows);
      const hashes = new Set([...answers.values()].map((a) => a.hash));
      return { answers, bodies: await keptBodiesOf(raw, [...hashes]) };
    });
    if (indexed.size >= BUSINESSES_INDEXED) indexed.delete(indexed.keys().next().value as number);
    indexed.set(id, loading);
    return loading;
  };
}

/**
 * The upstream as the run saw it: an undici mock pool that answers each request with the
 * body kept for it, and a request the raw zone cannot serve (no answer kept, a body that
 * no longer reads) with a status no upstream sends, naming the business it cannot rebuild.
 * `now` is the credential's clock: the latest observation time of the reads served, from
 * the run's first on.
 */
function keptUpstream(
  raw: Kysely<Database>,
  run: KeptRun,
  baseUrl: string,
  answerFor: AnswerFor,
  cannotRebuild: (businessId: number | null, reason: string) => void,
): { agent: MockAgent; pool: ReturnType<MockAgent['get']>; now: () => Date } {
  const bodyOf = keptBodies(raw);
  let clock = run.first_observed;
  const origin = new URL(baseUrl).origin;
  const prefix = `${new URL(baseUrl).pathname.replace(/\/+$/, '')}/api/v2`;
  const agent = new MockAgent({ connections: 1 });
  agent.disableNetConnect();
  const pool = agent.get(origin);
  pool
    .intercept({ path: () => true, method: () => true })
    .reply(async (request) => {
      const url = new URL(request.path, origin);
      const path = url.pathname.startsWith(prefix)
        ? url.pathname.slice(prefix.length)
        : url.pathname;
      const query: Record<string, string> = {};
      for (const [name, value] of url.searchParams)
        if (!SECRET_PARAMS.has(name)) query[name] = value;
      const found = await answerFor(path, requestKey(path, query));
      const businessId = businessIdOfPath(path);
      if (!found) {
        cannotRebuild(businessId, `the raw zone holds no answer to ${path}`);
        return { statusCode: NOT_KEPT_STATUS, data: 'not in the raw zone' };
      }
      const { answer } = found;
      // The credential's clock (archiving, the account's sync time, a poll): the read's own.
      if (answer.observedAt > clock) clock = answer.observedAt;
      let data: string;
      try {
        data = await bodyOf(answer.hash, found.bodies);
      } catch (error) {
        cannotRebuild(businessId, unreadableBodyReason(path, answer.hash, errorText(error)));
        return { statusCode: NOT_KEPT_STATUS, data: 'kept body unreadable' };
      }
      return {
        statusCode: answer.status,
        data,
        responseOptions: { headers: { 'content-type': 'application/json' } },
      };
    })
    .persist();
  return { agent, pool, now: () => clock };
}

/** The streams the kept run read, of those the sync has today (all, for a run that kept none). */
function replayedStreams(run: KeptRun, fetchedReference: boolean): Stream[] {
  const kept = Array.isArray(run.streams)
    ? (run.streams as string[]).filter((s): s is Stream =>
        (STREAMS as readonly string[]).includes(s),
      )
    : [...STREAMS];
  // A stream read once per run is replayed only when the kept run read it (src/streams).
  return kept.filter((stream) => replayRule(stream) === 'business-reads' || fetchedReference);
}

/** One credential's part of one run, through the sync, from the kept answers. */
async function replayAccountRun(
  target: Warehouse,
  raw: Kysely<Database>,
  run: KeptRun,
  account: { name: string; user_email: string; base_url: string },
  options: ReplayOptions,
): Promise<{ reads: number; runId: string; notRebuilt: NotRebuilt[] }> {
  const { businessTimes, reads, fetchedReference, answerFor } = await keptRunAnswers(
    raw,
    run,
    account.name,
    options,
  );
  // Businesses the run committed whose night this replay cannot rebuild, with the first reason.
  const missing = new Map<number, string>();
  const cannotRebuild = (id: number | null, reason: string) => {
    if (id !== null && businessTimes.has(id) && !missing.has(id)) missing.set(id, reason);
  };
  const { agent, pool, now } = keptUpstream(raw, run, account.base_url, answerFor, cannotRebuild);
  const api = createApiClient({
    dispatcher: pool,
    concurrency: 8,
    accountConcurrency: 8,
    // The kept answer is the last attempt: asking again would get the same.
    retry: { maxAttempts: 1 },
    // The run's own bounds: an answer it loaded loads again, one it refused is refused.
    ...recordedAnswerSettings(run.settings),
  });
  const credential: Credential = {
    name: account.name,
    baseUrl: account.base_url,
    // Never sent anywhere: the mock pool answers.
    authToken: 'replay',
    userEmail: account.user_email,
  };
  // The businesses the run committed: a listed business it never wrote is not written now.
  const committed = [...businessTimes.keys()];
  const committedSet = new Set(committed);
  // A run stopped before its end never archived or marked its accounts synced: its replay
  // does neither (a run of chosen businesses does not).
  const stoppedEarly = run.status === 'interrupted' || run.status === 'running';
  let runId: string;
  try {
    ({ runId } = await runSync({
      warehouse: target,
      api,
      credentials: [credential],
      logger: options.logger,
      trigger: 'replay',
      streams: replayedStreams(run, fetchedReference),
      keepRaw: options.keepRaw ?? false,
      // Side by side as the live sync runs them: each business gets the time it was kept
      // with, whatever the order its answers are served in.
      businessConcurrency: REPLAY_CONCURRENCY,
      overallBusinessConcurrency: REPLAY_CONCURRENCY,
      now,
      businessObservedAt: (_credential, businessId) => businessTimes.get(businessId),
      onBusinessError: (_c: Credential, id: number, e: unknown) => {
        cannotRebuild(id, `its write failed: ${errorText(e)}`);
        options.onBusinessError?.(id, e);
      },
      ...(run.shard ? { shard: parseShard(run.shard) } : {}),
      businessFilter: (id) => committedSet.has(id),
      ...(options.businessId !== undefined
        ? { businessIds: [options.businessId] }
        : stoppedEarly
          ? { businessIds: committed }
          : {}),
      ...(options.alertRules ? { alertRules: options.alertRules } : {}),
    }));
  } finally {
    await api.close();
    await agent.close();
  }
  const notRebuilt = [...missing].map(([businessId, reason]) => ({
    night: (businessTimes.get(businessId) as Date).toISOString().slice(0, 10),
    businessId,
    account: account.name,
    runId: run.run_id,
    reason,
  }));
  return { reads, runId, notRebuilt };
}
