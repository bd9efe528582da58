/**
 * The Airbyte source (docs/airbyte.md): `spec`, `check`, `discover` and `read` over the
 * same upstream client as `sync` (its bounds, retries, timeouts and 429 pause), writing
 * protocol messages and needing no database.
 *
 * `read` goes stream by stream in the catalog's order: for each credential it lists the
 * businesses once (kept for the later streams), reads each business's answer with at
 * most SYNC_ACCOUNT_CONCURRENCY in flight, and writes the records as each answer comes.
 * A stream's STATE follows its last record. Rankings are incremental by day, the cursor
 * inclusive: the state holds the last upstream day whose rankings were all written (`day`,
 * and per credential `days`), and a read on that same day writes its rankings again.
 */
import pLimit from 'p-limit';
import { observeResponses } from '../api/client.ts';
import type { BusinessSummary, Credential, RejectedRecord } from '../api/index.ts';
import {
  type ApiClient,
  ApiError,
  listBusinesses,
  listCountries,
  listStates,
  listSubCategories,
} from '../api/index.ts';
import { utcDay } from '../calendar-day.ts';
import { ConfigError } from '../config/index.ts';
import type { Logger } from '../log.ts';
import { type AnswerRead, type AnswerValue, BUSINESS_READS } from '../streams/index.ts';
import { observationTime } from '../sync/observation-clock.ts';
import { configSchema, type SourceConfig } from './config.ts';
import {
  type AirbyteCatalog,
  type AirbyteMessage,
  type AirbyteStateMessage,
  type ConfiguredAirbyteCatalog,
  type ConnectorSpecification,
  errorTrace,
  type FailureType,
  type MessageSink,
  streamStatus,
} from './protocol.ts';
import {
  airbyteStream,
  countryRecordOf,
  isIncremental,
  rankingRecordOf,
  reviewRecordOf,
  reviewResponseRecordOf,
  STREAM_NAMES,
  type StreamName,
  shapeOf,
  stateRecordOf,
  subCategoryRecordOf,
} from './streams.ts';

/**
 * Where Airbyte's UI links the connector's documentation: docs/airbyte.md, as the
 * project publishes it.
 */
export const DOCUMENTATION_URL =
  'https://github.com/listings-sync/listings-sync/blob/main/docs/airbyte.md';

export function spec(): ConnectorSpecification {
  return {
    documentationUrl: DOCUMENTATION_URL,
    connectionSpecification: configSchema(),
    supportsIncremental: true,
  };
}

export function discover(source: SourceConfig): AirbyteCatalog {
  return { streams: source.streams.map(airbyteStream) };
}

/** One cheap authenticated read per credential (the country list), as `listings-sync check`. */
export async function check(
  source: SourceConfig,
  api: ApiClient,
): Promise<{ status: 'SUCCEEDED' | 'FAILED'; message?: string }> {
  const failures = await Promise.all(
    source.credentials.map(async (credential) => {
      try {
        await listCountries(api, credential);
        return undefined;
      } catch (error) {
        return `credential "${credential.name}": ${describeFailure(error)}`;
      }
    }),
  );
  const failed = failures.filter((f): f is string => f !== undefined);
  if (failed.length === 0) {
    return {
      status: 'SUCCEEDED',
      message: `${source.credentials.length} credential(s) answer: ${source.credentials.map((c) => c.name).join(', ')}`,
    };
  }
  return { status: 'FAILED', message: failed.join('; ') };
}

/** What a failed upstream call means to the one who configured the source, and the fix. */
function describeFailure(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === 'AUTH_FAILURE') {
      return `the upstream refused the token and e-mail (${error.upstreamMessage ?? error.code}); check authToken and userEmail`;
    }
    if (error.retryable || error.code === 'PAUSE_TOO_LONG') {
      return `the upstream did not answer in time or is unavailable (${error.code}); try again later`;
    }
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

export function failureTypeOf(error: unknown): FailureType {
  if (error instanceof ConfigError) return 'config_error';
  if (error instanceof ApiError) {
    if (error.code === 'AUTH_FAILURE') return 'config_error';
    if (error.retryable || error.code === 'PAUSE_TOO_LONG') return 'transient_error';
  }
  return 'system_error';
}

/**
 * The catalog a `read` is given, checked against the streams the source has. A stream the
 * source does not have (the catalog is older or newer than the source) is not read: it is
 * listed in `unknown`, and `read` says so and gives it an INCOMPLETE status, as Airbyte's
 * own sources do; the other streams are read.
 */
export function parseConfiguredCatalog(json: unknown): {
  streams: Map<StreamName, 'full_refresh' | 'incremental'>;
  unknown: string[];
} {
  const streams = (json as { streams?: unknown })?.streams;
  if (!Array.isArray(streams)) {
    throw new ConfigError(
      'The catalog must be a JSON object with a "streams" list (a ConfiguredAirbyteCatalog).',
    );
  }
  const selected = new Map<StreamName, 'full_refresh' | 'incremental'>();
  const unknown: string[] = [];
  for (const [i, entry] of (streams as ConfiguredAirbyteCatalog['streams']).entries()) {
    const name = entry?.stream?.name;
    if (typeof name !== 'string' || name === '') {
      throw new ConfigError(`catalog streams[${i}] has no stream.name.`);
    }
    // A catalog that breaks the protocol is refused whatever the stream (CAT's
    // test_airbyte_trace_message_on_failure: a stream of no source, sync_mode INVALID).
    const mode = entry.sync_mode ?? 'full_refresh';
    if (mode !== 'full_refresh' && mode !== 'incremental') {
      throw new ConfigError(
        `catalog streams[${i}] (${name}): sync_mode must be full_refresh or incremental.`,
      );
    }
    if (!(STREAM_NAMES as readonly string[]).includes(name)) {
      unknown.push(name);
      continue;
    }
    if (mode === 'incremental' && !isIncremental(name as StreamName)) {
      throw new ConfigError(
        `catalog streams[${i}] (${name}) is incremental, but ${name} is read in full_refresh only; rankings is the incremental stream.`,
      );
    }
    selected.set(name as StreamName, mode);
  }
  return { streams: selected, unknown };
}

/** The state a `read` is given: per stream, from STREAM state messages (or an empty list). */
export function parseState(json: unknown): Map<string, Record<string, unknown>> {
  const states = new Map<string, Record<string, unknown>>();
  if (json === undefined || json === null) return states;
  const list = Array.isArray(json) ? json : [json];
  for (const [i, message] of list.entries()) {
    const stream = (message as Partial<AirbyteStateMessage>)?.stream;
    if ((message as { type?: unknown })?.type !== 'STREAM' || !stream?.stream_descriptor?.name) {
      throw new ConfigError(
        `state[${i}] is not a STREAM state message; give --state the list of STATE messages' "state" objects a previous read wrote (type STREAM).`,
      );
    }
    const state = (stream.stream_state ?? {}) as Record<string, unknown>;
    // Checked before anything is read: a state the source cannot use is the caller's to fix.
    if (stream.stream_descriptor.name === 'rankings') rankingsState(state);
    states.set(stream.stream_descriptor.name, state);
  }
  return states;
}

export interface ReadOptions {
  source: SourceConfig;
  catalog: Map<StreamName, 'full_refresh' | 'incremental'>;
  /** Streams of the catalog the source does not have: said, INCOMPLETE, not read. */
  unknownStreams?: readonly string[];
  state: Map<string, Record<string, unknown>>;
  api: ApiClient;
  logger: Logger;
  emit: MessageSink;
  /** Aborted to stop: no new request starts; the stream ends INCOMPLETE. */
  signal?: AbortSignal;
  now?: () => number;
}

/** One failed stream, reported after the others had their turn. */
interface StreamFailure {
  stream: StreamName;
  error: unknown;
}

/**
 * Reads every stream of the catalog. Returns the failures (empty: every stream COMPLETE);
 * the caller writes them as ERROR traces and exits non-zero.
 */
export async function read(options: ReadOptions): Promise<StreamFailure[]> {
  const { catalog, emit, api, logger } = options;
  const now = options.now ?? Date.now;
  const businesses = new Map<string, Promise<BusinessSummary[]>>();
  const businessesOf = (credential: Credential) => {
    let list = businesses.get(credential.name);
    if (!list) {
      list = listBusinesses(api, credential, { signal: options.signal }).then((result) => {
        reportRejected(logger, 'businesses', credential, result.rejected);
        return result.records;
      });
      businesses.set(credential.name, list);
    }
    return list;
  };
  const failures: StreamFailure[] = [];
  for (const name of options.unknownStreams ?? []) {
    logger.warn(
      { stream: name, streams: STREAM_NAMES },
      `the catalog names stream "${name}", which this source does not have: not read (refresh the connection's schema and remove it)`,
    );
    emit(streamStatus(name, 'INCOMPLETE', now));
  }
  // The configuration's `streams` bound what is read, as they bound what discover offers.
  for (const name of [...catalog.keys()]) {
    if (options.source.streams.includes(name)) continue;
    logger.warn(
      { stream: name, streams: options.source.streams },
      `the catalog names stream "${name}", which the configuration's streams leave out: not read (add it to streams, or refresh the connection's schema)`,
    );
    emit(streamStatus(name, 'INCOMPLETE', now));
  }
  const record = (stream: StreamName, data: Record<string, unknown>) =>
    emit({ type: 'RECORD', record: { stream, data, emitted_at: now() } });
  // Reviews and their responses come from one answer: read together when both are chosen.
  const handled = new Set<StreamName>();
  for (const name of catalog.keys()) {
    if (handled.has(name) || !options.source.streams.includes(name)) continue;
    const chosen = (stream: StreamName) =>
      catalog.has(stream) && options.source.streams.includes(stream);
    const together: StreamName[] =
      (name === 'reviews' || name === 'review_responses') &&
      chosen('reviews') &&
      chosen('review_responses')
        ? ['reviews', 'review_responses']
        : [name];
    for (const stream of together) {
      handled.add(stream);
      emit(streamStatus(stream, 'STARTED', now));
    }
    const counts = new Map<StreamName, number>(together.map((s) => [s, 0]));
    let running = false;
    const emitRecord = (stream: StreamName, data: Record<string, unknown>) => {
      if (!running) {
        running = true;
        for (const s of together) emit(streamStatus(s, 'RUNNING', now));
      }
      counts.set(stream, (counts.get(stream) ?? 0) + 1);
      record(stream, data);
    };
    const priorState = options.state.get(name) ?? {};
    const context: StreamContext = {
      ...options,
      businessesOf,
      emitRecord,
      streams: together,
      incremental: catalog.get(name) === 'incremental',
      priorState,
    };
    let outcome: { state: Record<string, unknown>; error?: unknown };
    try {
      outcome = await readStream(name, context);
    } catch (error) {
      outcome = { state: priorState, error };
    }
    for (const stream of together) {
      const state: AirbyteStateMessage = {
        type: 'STREAM',
        stream: {
          stream_descriptor: { name: stream },
          stream_state: stream === name ? outcome.state : {},
        },
        sourceStats: { recordCount: counts.get(stream) ?? 0 },
      };
      emit({ type: 'STATE', state });
      emit(streamStatus(stream, outcome.error === undefined ? 'COMPLETE' : 'INCOMPLETE', now));
      if (outcome.error !== undefined) failures.push({ stream, error: outcome.error });
    }
  }
  return failures;
}

/** The ERROR trace of a failed stream: its message names the stream and the fix. */
export function failureMessage(
  failure: StreamFailure,
  now: () => number = Date.now,
): AirbyteMessage {
  const error = failure.error;
  return errorTrace(
    {
      message: `stream ${failure.stream}: ${describeFailure(error)}`,
      internal_message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      failure_type: failureTypeOf(error),
      stream_descriptor: { name: failure.stream },
    },
    now,
  );
}

interface StreamContext extends ReadOptions {
  businessesOf(credential: Credential): Promise<BusinessSummary[]>;
  emitRecord(stream: StreamName, data: Record<string, unknown>): void;
  streams: StreamName[];
  incremental: boolean;
  priorState: Record<string, unknown>;
}

async function readStream(
  name: StreamName,
  context: StreamContext,
): Promise<{ state: Record<string, unknown>; error?: unknown }> {
  const { source, api, logger, emitRecord } = context;
  const signal = context.signal;
  const reference = source.credentials[0] as Credential;
  switch (name) {
    case 'countries': {
      const result = await listCountries(api, reference, { signal });
      reportRejected(logger, name, reference, result.rejected);
      for (const c of result.records) emitRecord(name, countryRecordOf(c));
      return { state: {} };
    }
    case 'sub_categories': {
      const result = await listSubCategories(api, reference, { signal });
      reportRejected(logger, name, reference, result.rejected);
      for (const s of result.records) emitRecord(name, subCategoryRecordOf(s));
      return { state: {} };
    }
    case 'states': {
      const countries = await listCountries(api, reference, { signal });
      const limit = pLimit(source.config.syncAccountConcurrency);
      await Promise.all(
        countries.records.map((country) =>
          limit(async () => {
            const result = await listStates(api, reference, country.id, { signal });
            reportRejected(logger, `${name} of country ${country.id}`, reference, result.rejected);
            for (const s of result.records) emitRecord(name, stateRecordOf(s));
          }),
        ),
      );
      return { state: {} };
    }
    case 'rankings':
      return readRankings(context);
    default:
      return readPerBusiness(name, context);
  }
}

/** One read of a business, by the operation its stream descriptor names (src/streams). */
function fetchRead<R extends AnswerRead>(
  read: R,
  api: ApiClient,
  credential: Credential,
  businessId: number,
  signal: AbortSignal | undefined,
): Promise<AnswerValue<R>> {
  const entry = BUSINESS_READS.find((r) => r.read === read);
  if (!entry) throw new Error(`no stream descriptor reads "${read}"`);
  return entry.fetch(api, credential, businessId, { signal }) as Promise<AnswerValue<R>>;
}

/** A per-business stream other than rankings, for every credential. */
async function readPerBusiness(
  name: StreamName,
  context: StreamContext,
): Promise<{ state: Record<string, unknown>; error?: unknown }> {
  const { source, api, logger, emitRecord, streams, signal } = context;
  let firstError: unknown;
  for (const credential of source.credentials) {
    const account = credential.name;
    try {
      const list = await context.businessesOf(credential);
      await eachBusiness(context, list, async (business) => {
        const id = business.id;
        switch (name) {
          case 'reviews':
          case 'review_responses': {
            for (const [category, read] of [
              ['review', 'reviews'],
              ['social', 'socials'],
            ] as const) {
              const result = await fetchRead(read, api, credential, id, signal);
              reportRejected(logger, `${category}s of business ${id}`, credential, result.rejected);
              for (const review of result.records) {
                if (streams.includes('reviews'))
                  emitRecord('reviews', reviewRecordOf(account, id, review));
                if (streams.includes('review_responses')) {
                  for (const response of review.responses) {
                    emitRecord(
                      'review_responses',
                      reviewResponseRecordOf(account, id, review.id, response),
                    );
                  }
                }
              }
            }
            return;
          }
          default: {
            // One read, its records: as the stream's descriptor says (src/streams).
            const from = shapeOf(name).perBusiness;
            if (!from) throw new Error(`stream ${name} names no read of a business`);
            const answer: unknown = await fetchRead(
              from.read as AnswerRead,
              api,
              credential,
              id,
              signal,
            );
            const rejected = (answer as { rejected?: readonly RejectedRecord[] }).rejected;
            if (rejected) reportRejected(logger, `${name} of business ${id}`, credential, rejected);
            for (const data of from.records(account, id, answer as never)) emitRecord(name, data);
            return;
          }
        }
      });
    } catch (error) {
      firstError ??= error;
      logger.error(
        { stream: name, credential: account, err: error },
        'the stream failed for this credential',
      );
    }
  }
  return firstError === undefined ? { state: {} } : { state: {}, error: firstError };
}

/**
 * Rankings, one record per business, keyword, site and upstream day. Incremental with an
 * inclusive cursor (Airbyte's convention, docs/airbyte.md, "Rankings, incrementally"): a
 * read on the day its state records writes that day's ranks again, and a deduplicating
 * destination keeps one copy by the primary key. A credential's day moves on only when
 * every business's rankings were written.
 */
async function readRankings(
  context: StreamContext,
): Promise<{ state: Record<string, unknown>; error?: unknown }> {
  const { source, api, logger, emitRecord } = context;
  // The state is honoured in full refresh too: the stream is resumable (is_resumable), and
  // Airbyte gives a full refresh job it resumes the state its first attempt wrote.
  const prior = rankingsState(context.priorState);
  const days: Record<string, string> = { ...prior.days };
  let firstError: unknown;
  // Each answer's own day: the upstream's Date as the answer came (read while the exchange
  // is still this answer's), so a read across the upstream's midnight stamps each business
  // with the day its ranks are of, as `sync` stamps each business with its own observation.
  const answerDays = new Map<string, string>();
  const stopObserving = observeResponses(api, (seen) => {
    if (seen.operation !== 'get_rankings' || seen.status < 200 || seen.status > 299) return;
    answerDays.set(
      `${seen.credential.name} ${seen.path}`,
      utcDay(observationTime(api, seen.credential).at),
    );
  });
  try {
    for (const credential of source.credentials) {
      const account = credential.name;
      try {
        const list = await context.businessesOf(credential);
        // The day the upstream is on, from the Date of its latest answer (the list's).
        const day = utcDay(observationTime(api, credential).at);
        // `day` alone (no `days`) is every credential's; beside `days`, only the latest of them.
        const last = prior.perCredential ? prior.days[account] : prior.day;
        if (last !== undefined && last > day) {
          // Not a day the upstream has reached: its ranks now are of an earlier day.
          logger.warn(
            { stream: 'rankings', credential: account, day, state: last },
            "the state's day is ahead of the upstream's: no rankings read for this credential",
          );
          continue;
        }
        let latest = day;
        await eachBusiness(context, list, async (business) => {
          const result = await fetchRead('rankings', api, credential, business.id, context.signal);
          const answered =
            answerDays.get(`${account} /businesses/${business.id}/rankings.json`) ?? day;
          if (answered > latest) latest = answered;
          reportRejected(
            logger,
            `rankings of business ${business.id}`,
            credential,
            result.rejected,
          );
          for (const o of result.records) {
            emitRecord('rankings', rankingRecordOf(account, business.id, answered, o));
          }
        });
        days[account] = latest;
      } catch (error) {
        firstError ??= error;
        logger.error(
          { stream: 'rankings', credential: account, err: error },
          'the stream failed for this credential',
        );
      }
    }
  } finally {
    stopObserving();
  }
  const state = stateOfDays(days, prior.day);
  return firstError === undefined ? { state } : { state, error: firstError };
}

/**
 * The rankings state a read writes: `day`, the latest upstream day whose rankings were
 * written (where CAT's default cursor_paths, the cursor field `day`, finds it), and `days`,
 * that day per credential.
 */
function stateOfDays(days: Record<string, string>, given: string | undefined) {
  const latest = Object.values(days).reduce<string | undefined>(
    (max, d) => (max === undefined || d > max ? d : max),
    given,
  );
  return latest === undefined ? { days } : { day: latest, days };
}

/** A rankings state: `{day?, days?}`; `{"days": {...}}` alone is the shape of earlier versions. */
export function rankingsState(state: Record<string, unknown>): {
  day?: string;
  days: Record<string, string>;
  perCredential: boolean;
} {
  const { day, days } = state;
  const shape =
    'the rankings state must be {"day": "YYYY-MM-DD", "days": {"<credential name>": "YYYY-MM-DD"}}, as a previous read wrote it';
  const checkDay = (where: string, d: unknown) => {
    if (typeof d !== 'string' || !isCalendarDay(d)) {
      throw new ConfigError(`${where} is ${JSON.stringify(d)}, not a calendar day: ${shape}.`);
    }
  };
  if (day !== undefined) checkDay('the rankings state\'s "day"', day);
  if (days !== undefined) {
    if (typeof days !== 'object' || days === null || Array.isArray(days)) {
      throw new ConfigError(`${shape}.`);
    }
    for (const [name, d] of Object.entries(days)) checkDay(`the rankings state's days.${name}`, d);
  }
  return {
    ...(day === undefined ? {} : { day: day as string }),
    days: (days ?? {}) as Record<string, string>,
    perCredential: days !== undefined,
  };
}

/** `YYYY-MM-DD` of a day the calendar has (not 2026-13-45, not 2026-02-30). */
function isCalendarDay(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const at = Date.parse(`${text}T00:00:00Z`);
  return Number.isFinite(at) && utcDay(new Date(at)) === text;
}

/**
 * Runs `work` for each business, SYNC_ACCOUNT_CONCURRENCY at once; the first failure
 * stops new ones from starting and is thrown once those in flight are done.
 */
async function eachBusiness(
  context: StreamContext,
  list: readonly BusinessSummary[],
  work: (business: BusinessSummary) => Promise<void>,
): Promise<void> {
  const limit = pLimit(context.source.config.syncAccountConcurrency);
  let failed: { error: unknown } | undefined;
  await Promise.all(
    list.map((business) =>
      limit(async () => {
        if (failed || context.signal?.aborted) return;
        try {
          await work(business);
        } catch (error) {
          failed ??= { error };
        }
      }),
    ),
  );
  if (failed) throw failed.error;
  if (context.signal?.aborted) throw new Error('stopped before every business was read');
}

function reportRejected(
  logger: Logger,
  what: string,
  credential: Credential,
  rejected: readonly RejectedRecord[],
): void {
  for (const r of rejected) {
    // The location and the reason; never the payload, which may hold what a record carries.
    logger.warn(
      { credential: credential.name, location: r.location, reason: r.reason },
      `a record of ${what} failed its schema and was left out`,
    );
  }
}
