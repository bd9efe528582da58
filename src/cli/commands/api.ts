/**
 * `listings-sync api …`: every operation of the upstream from the command line.
 *
 *   api businesses list | get ID [--full] | create --file F | update ID --file F | archive ID
 *   api listings ID
 *   api reviews ID [--category review|social]
 *   api reviews respond BUSINESS_ID REVIEW_ID (--file F | --content TEXT)
 *   api reviews response-status REQUEST_ID [--business-id ID --review-id UUID]
 *   api rankings ID
 *   api keywords list ID | add ID KEYWORD… | delete KEYWORD_ID
 *   api countries | states COUNTRY | sub-categories
 *
 * Every command takes `--account NAME` and `--format json|table`. Output is the client's
 * normalised values on stdout; warnings, notes and errors go to stderr. A write re-syncs
 * the business it touched (src/cli/workflows/resync.ts). Exit codes: 0 ok, 1 upstream or fatal error,
 * 2 usage, 3 partial (a record failed its schema, or the warehouse could not follow a
 * write).
 */
import { type Command, Option } from 'commander';
import {
  addKeyword,
  archiveBusiness,
  type BusinessInput,
  createBusiness,
  deleteKeyword,
  getBusiness,
  getBusinessFull,
  getRankings,
  type ListResult,
  listBusinesses,
  listCountries,
  listKeywords,
  listListings,
  listReviews,
  listStates,
  listSubCategories,
  updateBusiness,
} from '../../api/index.ts';
import { countryByIsoCode } from '../../api/reference.ts';
import { ApiError } from '../../api/transport/errors.ts';
import type { Config } from '../../config/index.ts';
import type { Warehouse } from '../../warehouse/driver/connection.ts';
import { storedBusinessAccount } from '../../warehouse/runs/business-account.ts';
import { businessOfStoredKeyword } from '../../warehouse/tables/keywords.ts';
import type { CliIo } from '../command/io.ts';
import { openCommandWarehouse } from '../command/warehouse.ts';
import { needsReferenceNames, prepareBusinessInput } from '../workflows/business-input.ts';
import {
  accountOption,
  action,
  EXIT,
  parseId,
  readJsonBody,
  reportError,
  type Session,
  UsageError,
  type WorkflowIo,
  withSession,
  workflowIo,
} from '../workflows/command-context.ts';
import { foldKeyword } from '../workflows/keywords-apply.ts';
import { type OutputFormat, parseFormat, renderOutput } from '../workflows/output.ts';
import { loadReferenceCatalog, resolveCountry } from '../workflows/reference-names.ts';
import { markArchived, resyncBusinesses, storeCategory } from '../workflows/resync.ts';
import {
  parseReviewId,
  responseContent,
  showResponseStatus,
  submitReviewResponse,
} from '../workflows/review-responses.ts';

interface CommonOptions {
  account?: string;
  format?: string;
}

/**
 * A subcommand's options merged with its parents'. `reviews` and its subcommands share
 * `--account` and `--format`; commander (without positional options on every ancestor)
 * hands such an option to the parent, wherever it stands on the line.
 */
function withParents<T>(command: Command): T {
  return command.optsWithGlobals() as T;
}

function common(command: Command): Command {
  return accountOption(command).addOption(
    new Option('--format <format>', 'json (default) or table').choices(['json', 'table']),
  );
}

/** Prints a list's records; records that failed their schema are reported and make it partial. */
function printList<T>(io: WorkflowIo, result: ListResult<T>, format: OutputFormat): number {
  io.stdout(renderOutput(result.records, format));
  for (const rejected of result.rejected) {
    io.stderr(
      `listings-sync: warning: record ${rejected.location} was left out: ${rejected.reason}\n`,
    );
  }
  return result.rejected.length ? EXIT.partial : EXIT.ok;
}

/**
 * Opens the warehouse to look a business up in, or fails: a lookup never creates a
 * database (an embedded one that does not exist is an error, as for `check`).
 */
type LookupWarehouse = (config: Config) => Promise<Warehouse>;

function lookupWarehouse(cliIo: CliIo): LookupWarehouse {
  return (config) => openCommandWarehouse(cliIo, config, 'inspect');
}

/**
 * Why the upstream said a business does not exist for this account, when the warehouse
 * knows better: the business is stored under another account, and the command works with
 * `--account` naming it. Undefined when there is no warehouse to ask (the command works
 * without one), it cannot be read, or it says nothing more.
 */
async function otherAccountAdvice(
  session: Session,
  businessId: number,
  warehouse: () => Promise<Warehouse>,
  close: boolean,
): Promise<string | undefined> {
  let opened: Warehouse | undefined;
  try {
    opened = await warehouse();
    const stored = await storedBusinessAccount(opened.db, businessId);
    const mine = session.credential.name;
    if (!stored || stored.accountName === mine) return undefined;
    const configured = session.config.credentials.map((c) => c.name);
    const archived = stored.archivedAt ? ' (archived there at its last sync)' : '';
    return configured.includes(stored.accountName)
      ? `The warehouse has business ${businessId} under account ${stored.accountName}${archived}, not ${mine}: run the command again with --account ${stored.accountName}.`
      : `The warehouse has business ${businessId} under account ${stored.accountName}${archived}, not ${mine}; no credential of that name is configured here (configured: ${configured.join(', ')}).`;
  } catch {
    return undefined;
  } finally {
    if (close) await opened?.close().catch(() => {});
  }
}

/**
 * Runs `call` for one business; when the upstream answers that the business does not
 * exist for this account (`UNKNOWN_BUSINESS`) and the warehouse has it under another, prints the upstream's
 * error and, under it, the account to use (docs/troubleshooting.md). `warehouse` is the
 * session's own for a write (already open), a lookup of its own for a read.
 */
/**
 * The upstream's answers to a business id this account does not have: `This business
 * doesn't exist` (operations 2, 3, 5 to 8, 11) and `Invalid location id` (keywords, 12
 * and 13; docs/upstream.md, "Errors").
 */
const UNKNOWN_BUSINESS: ReadonlySet<string> = new Set([
  'BUSINESS_NOT_FOUND',
  'INVALID_LOCATION_ID',
]);

/** For a read: a lookup of its own, closed after. */
function lookupFor(lookup: LookupWarehouse, session: Session) {
  return { open: () => lookup(session.config), close: true };
}

/** For a write: the session's warehouse, which it opened before the call and closes itself. */
function sessionWarehouse(session: Session) {
  return { open: () => session.warehouse(), close: false };
}

async function forBusiness(
  io: WorkflowIo,
  session: Session,
  businessId: number,
  warehouse: { open: () => Promise<Warehouse>; close: boolean },
  call: () => Promise<number>,
): Promise<number> {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof ApiError) || !UNKNOWN_BUSINESS.has(error.code)) throw error;
    const advice = await otherAccountAdvice(session, businessId, warehouse.open, warehouse.close);
    if (advice === undefined) throw error;
    const code = reportError(io, error);
    io.stderr(`  ${advice}\n`);
    return code;
  }
}

/**
 * A read: a session, one call, its output. Commander calls an action with the
 * arguments, the options and the command; `body` gets the arguments and the options.
 */
function read<A extends unknown[]>(
  io: WorkflowIo,
  body: (session: Session, format: OutputFormat, ...args: A) => Promise<number>,
) {
  return action(io, async (...args: unknown[]) => {
    const withOptions = args.slice(0, -1);
    const options = withOptions[withOptions.length - 1] as CommonOptions;
    const format = parseFormat(options.format);
    return withSession(io, options.account, (session) =>
      body(session, format, ...(withOptions as A)),
    );
  });
}

/**
 * A write on what its one argument names (`<business-id>`, `<keyword-id>`): the format and
 * the id are read before a session opens, and `body` runs in the session.
 */
function writeOn<O extends CommonOptions>(
  io: WorkflowIo,
  argument: string,
  body: (session: Session, format: OutputFormat, id: number, options: O) => Promise<number>,
) {
  return action(io, async (text: string, options: O) => {
    const format = parseFormat(options.format);
    const id = parseId(argument, text);
    return withSession(io, options.account, (session) => body(session, format, id, options));
  });
}

async function businessBody(
  io: WorkflowIo,
  session: Session,
  file: string | undefined,
): Promise<Partial<BusinessInput>> {
  const body = await readJsonBody(io, file);
  const catalog = needsReferenceNames(body)
    ? await loadReferenceCatalog((await session.warehouse()).db, session.api, session.credential)
    : undefined;
  const prepared = prepareBusinessInput(body, catalog);
  for (const warning of prepared.warnings) io.stderr(`listings-sync: warning: ${warning}\n`);
  return prepared.input;
}

/**
 * `<name> <business-id>` under `parent`: a read of one business's records (its listings,
 * rankings or keywords), printed as a list.
 */
function businessListCommand<T>(
  parent: Command,
  io: WorkflowIo,
  lookup: LookupWarehouse,
  name: string,
  description: string,
  fetch: (
    api: Session['api'],
    credential: Session['credential'],
    businessId: number,
  ) => Promise<ListResult<T>>,
): void {
  common(parent.command(name).description(description).argument('<business-id>')).action(
    read(io, async (session, format, id: string) => {
      const businessId = parseId('business-id', id);
      return forBusiness(io, session, businessId, lookupFor(lookup, session), async () =>
        printList(io, await fetch(session.api, session.credential, businessId), format),
      );
    }),
  );
}

/** A read of a list of no business (the account's businesses, reference data), printed. */
function listAction<T>(
  io: WorkflowIo,
  fetch: (api: Session['api'], credential: Session['credential']) => Promise<ListResult<T>>,
) {
  return read(io, async (session, format) =>
    printList(io, await fetch(session.api, session.credential), format),
  );
}

function registerBusinesses(api: Command, io: WorkflowIo, lookup: LookupWarehouse): void {
  const businesses = api.command('businesses').description('Businesses (operations 1 to 6).');

  common(businesses.command('list').description('Every business of the credential.')).action(
    listAction(io, listBusinesses),
  );

  common(
    businesses
      .command('get')
      .description('One business: the basic read, or with --full every field.')
      .argument('<business-id>')
      .option('--full', 'the full read (type=all)'),
  ).action(
    read(io, async (session, format, id: string, options: { full?: boolean }) => {
      const businessId = parseId('business-id', id);
      return forBusiness(io, session, businessId, lookupFor(lookup, session), async () => {
        const value = options.full
          ? await getBusinessFull(session.api, session.credential, businessId)
          : await getBusiness(session.api, session.credential, businessId);
        io.stdout(renderOutput(value, format));
        return EXIT.ok;
      });
    }),
  );

  common(
    businesses
      .command('create')
      .description(
        'Create a business from a JSON body; country, state and sub_category may be names.',
      )
      .requiredOption('--file <file>', 'the body (`-`: standard input)'),
  ).action(
    action(io, async (options: CommonOptions & { file: string }) => {
      const format = parseFormat(options.format);
      return withSession(io, options.account, async (session) => {
        await session.warehouse(); // before the write: the re-sync needs it
        const input = await businessBody(io, session, options.file);
        const created = await createBusiness(
          session.api,
          session.credential,
          input as BusinessInput,
        );
        io.stdout(renderOutput(created, format));
        const synced = await resyncBusinesses(io, session, [created.id]);
        const categorized = await storeCategory(io, session, created.id, {
          name: created.subCategoryName,
        });
        return synced && categorized ? EXIT.ok : EXIT.partial;
      });
    }),
  );

  common(
    businesses
      .command('update')
      .description('Update a business with the fields of a JSON body (a partial business).')
      .argument('<business-id>')
      .requiredOption('--file <file>', 'the body (`-`: standard input)'),
  ).action(
    writeOn(
      io,
      'business-id',
      async (session, format, businessId, options: CommonOptions & { file: string }) => {
        await session.warehouse();
        const input = await businessBody(io, session, options.file);
        return forBusiness(io, session, businessId, sessionWarehouse(session), async () => {
          const updated = await updateBusiness(session.api, session.credential, businessId, input);
          io.stdout(renderOutput(updated, format));
          const synced = await resyncBusinesses(io, session, [businessId]);
          // The answer to update names no category: a new sub_category_id is named from the
          // reference data instead.
          const subCategoryId = (input as Partial<BusinessInput>).sub_category_id;
          const categorized =
            subCategoryId === undefined ||
            (await storeCategory(io, session, businessId, { subCategoryId }));
          return synced && categorized ? EXIT.ok : EXIT.partial;
        });
      },
    ),
  );

  common(
    businesses.command('archive').description('Archive a business.').argument('<business-id>'),
  ).action(
    writeOn(io, 'business-id', async (session, format, businessId) => {
      await session.warehouse();
      return forBusiness(io, session, businessId, sessionWarehouse(session), async () => {
        await archiveBusiness(session.api, session.credential, businessId);
        io.stdout(renderOutput({ businessId, archived: true }, format));
        return (await markArchived(io, session, businessId)) ? EXIT.ok : EXIT.partial;
      });
    }),
  );
}

function registerReviews(api: Command, io: WorkflowIo, lookup: LookupWarehouse): void {
  const reviews = common(
    api
      .command('reviews')
      .description('Reviews of a business (operation 8); respond and follow responses (9, 10).')
      .argument('[business-id]')
      .addOption(
        new Option('--category <category>', 'review (default) or social').choices([
          'review',
          'social',
        ]),
      ),
  ).action(
    read(
      io,
      async (
        session,
        format,
        id: string | undefined,
        options: { category?: 'review' | 'social' },
      ) => {
        if (id === undefined) {
          throw new UsageError(
            'api reviews takes a business id, or one of: respond, response-status.',
          );
        }
        const businessId = parseId('business-id', id);
        return forBusiness(io, session, businessId, lookupFor(lookup, session), async () => {
          const result = await listReviews(
            session.api,
            session.credential,
            businessId,
            options.category ?? 'review',
          );
          return printList(io, result, format);
        });
      },
    ),
  );

  common(
    reviews
      .command('respond')
      .description(
        'Submit a response to a review (Facebook, Google, Yelp); recorded and followed by every sync.',
      )
      .argument('<business-id>')
      .argument('<review-id>')
      .option('--file <file>', 'the body {"content": "…"} (`-`: standard input)')
      .option('--content <text>', 'the response text, instead of --file'),
  ).action(
    action(io, async (id: string, review: string, _options: unknown, command: Command) => {
      // `reviews` has the same options: commander may give them to it (see withParents).
      const options = withParents<CommonOptions & { file?: string; content?: string }>(command);
      const format = parseFormat(options.format);
      const businessId = parseId('business-id', id);
      const reviewId = parseReviewId(review);
      const body = options.file === undefined ? undefined : await readJsonBody(io, options.file);
      if (body === undefined && options.content === undefined) {
        throw new UsageError('give the response with --file FILE (or -) or --content TEXT.');
      }
      const content = responseContent(body, options.content);
      return withSession(io, options.account, (session) =>
        submitReviewResponse(io, session, { businessId, reviewId, content, format }),
      );
    }),
  );

  common(
    reviews
      .command('response-status')
      .description('The status of a submitted response (operation 10); a change is recorded.')
      .argument('<request-id>')
      .option('--business-id <id>', 'needed only for a request not recorded in the warehouse')
      .option('--review-id <uuid>', 'needed only for a request not recorded in the warehouse'),
  ).action(
    action(io, async (requestId: string, _options: unknown, command: Command) => {
      const options = withParents<CommonOptions & { businessId?: string; reviewId?: string }>(
        command,
      );
      const format = parseFormat(options.format);
      if (!/^[\w-]{1,64}$/.test(requestId)) {
        throw new UsageError(`"${requestId}" is not a request id.`);
      }
      const businessId =
        options.businessId === undefined ? undefined : parseId('--business-id', options.businessId);
      const reviewId = options.reviewId === undefined ? undefined : parseReviewId(options.reviewId);
      return withSession(io, options.account, (session) =>
        showResponseStatus(io, session, {
          requestId,
          format,
          ...(businessId !== undefined ? { businessId } : {}),
          ...(reviewId !== undefined ? { reviewId } : {}),
        }),
      );
    }),
  );
}

/**
 * `keywords add ID "plumber austin" "emergency plumber"` adds two keywords: each argument
 * is one keyword, never joined (a join once created one long keyword on a live account).
 * Empty and repeated arguments are usage errors, found before anything is sent.
 */
export function parseKeywordArguments(words: readonly string[]): string[] {
  const keywords = words.map((word) => word.trim().replace(/\s+/g, ' '));
  const empty = keywords.indexOf('');
  if (empty >= 0) throw new UsageError(`keyword ${empty + 1} is empty.`);
  const seen = new Set<string>();
  for (const keyword of keywords) {
    const key = foldKeyword(keyword);
    if (seen.has(key)) throw new UsageError(`the keyword "${keyword}" is given twice.`);
    seen.add(key);
  }
  return keywords;
}

/**
 * `keywords add`, in the session's warehouse (opened before any write). Ranks come keyed
 * by keyword text (docs/upstream.md, Fields): a second live keyword with the same text
 * would share the first one's rank series, so it is refused (docs/warehouse.md, "Ranks
 * and keyword ids"), before anything is sent. The upstream does not refuse it.
 */
async function addKeywords(
  io: WorkflowIo,
  session: Session,
  businessId: number,
  keywords: readonly string[],
  format: OutputFormat,
): Promise<number> {
  await session.warehouse();
  const live = (await listKeywords(session.api, session.credential, businessId)).records;
  for (const keyword of keywords) {
    const existing = live.find(
      (k) => !k.archived && foldKeyword(k.keyword) === foldKeyword(keyword),
    );
    if (existing) {
      throw new UsageError(
        `business ${businessId} already has the keyword "${existing.keyword}" (id ${existing.id}); ` +
          'ranks are keyed by keyword text, so a second one would share its ranks. Nothing was added.',
      );
    }
  }
  // One at a time, in the order given: a failure stops before the rest, and what was
  // added before it is printed and re-synced, so the user knows exactly what landed.
  const added: Awaited<ReturnType<typeof addKeyword>>[] = [];
  let failure: unknown;
  for (const keyword of keywords) {
    try {
      added.push(await addKeyword(session.api, session.credential, businessId, keyword));
    } catch (error) {
      failure = error;
      break;
    }
  }
  if (added.length) {
    io.stdout(renderOutput(keywords.length === 1 ? added[0] : added, format));
  }
  if (failure !== undefined) {
    if (added.length) await resyncBusinesses(io, session, [businessId]);
    throw failure;
  }
  return (await resyncBusinesses(io, session, [businessId])) ? EXIT.ok : EXIT.partial;
}

function registerKeywordOperations(api: Command, io: WorkflowIo, lookup: LookupWarehouse): void {
  const keywords = api
    .command('keywords')
    .description('Keywords of a business (operations 12, 13, 14); see also `keywords apply`.');

  businessListCommand(keywords, io, lookup, 'list', 'A business’s keywords.', listKeywords);

  common(
    keywords
      .command('add')
      .description(
        'Add keywords to a business: each argument is one keyword, so quote a keyword of several words.',
      )
      .argument('<business-id>')
      .argument('<keyword...>', 'one or more keywords, e.g. "plumber austin" "emergency plumber"'),
  ).action(
    action(io, async (id: string, words: string[], options: CommonOptions) => {
      const format = parseFormat(options.format);
      const businessId = parseId('business-id', id);
      const keywords = parseKeywordArguments(words);
      return withSession(io, options.account, (session) =>
        forBusiness(io, session, businessId, sessionWarehouse(session), () =>
          addKeywords(io, session, businessId, keywords, format),
        ),
      );
    }),
  );

  common(
    keywords.command('delete').description('Delete a keyword by its id.').argument('<keyword-id>'),
  ).action(
    writeOn(io, 'keyword-id', async (session, format, keywordId) => {
      const warehouse = await session.warehouse();
      const storedBusinessId = await businessOfStoredKeyword(warehouse.db, keywordId);
      const deleted = await deleteKeyword(session.api, session.credential, keywordId);
      io.stdout(renderOutput({ keywordId, deleted: true, message: deleted.message }, format));
      if (storedBusinessId === undefined) {
        io.stderr(
          `warehouse: keyword ${keywordId} is not stored, so its business is unknown here; the next sync records the deletion.\n`,
        );
        return EXIT.ok;
      }
      return (await resyncBusinesses(io, session, [storedBusinessId])) ? EXIT.ok : EXIT.partial;
    }),
  );
}

/**
 * A country named on the command line: an ISO 3166-1 alpha-2 code first (`US`, `au`; the
 * upstream's countries carry no code, so the code's English name is matched), then a name.
 * A code is never taken for a fragment of a name (`US` is not "Australia").
 */
async function countryIdOf(session: Session, text: string): Promise<number> {
  const countries = (await listCountries(session.api, session.credential)).records;
  const byCode = countryByIsoCode(countries, text);
  if (byCode?.country) return byCode.country.id;
  if (byCode) {
    const listed = countries.map((c) => `${c.name} (id ${c.id})`).join('; ');
    throw new UsageError(
      `country "${text.trim()}" is the ISO code of ${byCode.name}, which the upstream does not list. Its countries: ${listed}.`,
    );
  }
  return resolveCountry({ countries, states: [], subCategories: [], source: 'api' }, text).id;
}

function registerReference(api: Command, io: WorkflowIo): void {
  common(api.command('countries').description('Countries (operation 16).')).action(
    listAction(io, listCountries),
  );
  common(
    api
      .command('states')
      .description(
        'States of a country (operation 15): its id, its ISO 3166 code (US, AU) or its name.',
      )
      .argument('<country>'),
  ).action(
    read(io, async (session, format, country: string) => {
      const countryId = /^\d+$/.test(country.trim())
        ? parseId('country', country)
        : await countryIdOf(session, country);
      return printList(io, await listStates(session.api, session.credential, countryId), format);
    }),
  );
  common(api.command('sub-categories').description('Sub categories (operation 17).')).action(
    listAction(io, listSubCategories),
  );
}

/** Adds `api` and its subcommands to the program. */
export function registerApiCommand(program: Command, cliIo: CliIo): Command {
  const io = workflowIo(cliIo, 'api');
  const lookup = lookupWarehouse(cliIo);
  const api = program
    .command('api')
    .description('Call any operation of the upstream API; writes re-sync the business they touch.');
  registerBusinesses(api, io, lookup);
  businessListCommand(
    api,
    io,
    lookup,
    'listings',
    'Listings of a business (operation 7).',
    listListings,
  );
  registerReviews(api, io, lookup);
  businessListCommand(
    api,
    io,
    lookup,
    'rankings',
    'Keyword rankings of a business (operation 11).',
    getRankings,
  );
  registerKeywordOperations(api, io, lookup);
  registerReference(api, io);
  return api;
}
