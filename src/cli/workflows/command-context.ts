/**
 * What the workflow commands (`api …`, `keywords apply`) share: where they read and
 * write (derived from the command line's one I/O context, src/cli/command/io.ts, so tests run them
 * in-process through `main(argv, io)`), which credential they act for, how an upstream
 * error is printed, and the exit codes of README.md ("Commands").
 *
 * An upstream error prints as `listings-sync: <CODE>: <the upstream's message, verbatim>`
 * and exits 1. Nothing here ever prints a token: credentials are named, never shown, and
 * transport errors carry no URL with its query (the client's guarantee).
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { createConfiguredApiClient } from '../../api/client.ts';
import type { ApiClient } from '../../api/index.ts';
import { ApiError, type ApiErrorCode } from '../../api/transport/errors.ts';
import { type Config, type Credential, requireCredentials } from '../../config/index.ts';
import { type Logger, redactText } from '../../log.ts';
import { UsageError } from '../../usage-error.ts';
import type { Warehouse } from '../../warehouse/driver/connection.ts';
import { requireCurrentSchema } from '../../warehouse/driver/open.ts';
import { EXIT } from '../command/exit-codes.ts';
import type { CliIo } from '../command/io.ts';
import { createCommandLogger } from '../command/logger.ts';
import { printError } from '../command/print-error.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';
import { openCommandWarehouse } from '../command/warehouse.ts';

export { UsageError } from '../../usage-error.ts';
export { EXIT } from '../command/exit-codes.ts';

/** Where a workflow command reads, writes and prints: `workflowIo(io, command)` derives it from the command's `CliIo`. */
export interface WorkflowIo {
  loadConfig(): Config;
  openWarehouse(config: Config): Promise<Warehouse>;
  createApi(config: Config, logger: Logger): ApiClient;
  createLogger(config: Config): Logger;
  stdout(text: string): void;
  stderr(text: string): void;
  /** The whole of standard input (for `--file -`). */
  readStdin(): Promise<string>;
  readFile(path: string): Promise<string>;
  setExitCode(code: number): void;
  /**
   * The clock of re-syncs (observation times). Unset, they take the upstream's own time
   * of each answer, which is what keeps the sandbox's moved clock and the warehouse in step.
   */
  now?: () => Date;
}

/** The workflow view of a command's I/O context; a test's `io.services` replace the warehouse, client and logger. */
export function workflowIo(io: CliIo, command: string): WorkflowIo {
  return {
    // With the misspelt-variable warnings every command prints.
    loadConfig: () => loadCommandConfig(io, command),
    openWarehouse: (config) => openCommandWarehouse(io, config),
    createApi: (config, logger) =>
      io.services?.createApi
        ? io.services.createApi(config, logger)
        : createConfiguredApiClient(config, logger),
    createLogger: (config) => createCommandLogger(io, config, { quiet: true }),
    stdout: (text) => io.stdout(text),
    stderr: (text) => io.stderr(text),
    readStdin: () => io.readStdin(),
    readFile: (path) => readFile(path, 'utf8'),
    setExitCode: (code) => {
      io.exitCode = code;
    },
  };
}

/**
 * The credential a command acts for: the one `--account` names, else the only one
 * configured; several and no `--account` is a usage error that lists the names.
 */
export function chooseCredential(config: Config, account: string | undefined): Credential {
  const all = requireCredentials(config);
  const names = all.map((c) => c.name).join(', ');
  if (account !== undefined) {
    const found = all.find((c) => c.name === account);
    if (!found)
      throw new UsageError(`--account ${account}: no such credential. Configured: ${names}.`);
    return found;
  }
  if (all.length === 1) return all[0]!;
  throw new UsageError(
    `${all.length} credentials are configured; choose one with --account NAME (one of: ${names}).`,
  );
}

/**
 * What to do about each refusal of operation 9, after the upstream's own sentence. The
 * upstream allows one response per review, ever: most refusals are final.
 */
export const RESPOND_ADVICE: Partial<Record<ApiErrorCode, string>> = {
  REVIEW_ID_INVALID:
    'No review with this id belongs to this business (social items cannot be answered). List the reviews with `listings-sync api reviews <business-id>` and use the id of one of them.',
  REVIEW_CONTENT_EMPTY:
    'The response text is empty. Give it as {"content": "…"} with --file, or with --content.',
  REVIEW_NOT_YOURS:
    'The review belongs to a business another credential added. Run the command again with --account naming that credential.',
  SITE_CREDENTIALS_NOT_SET:
    "The directory login for this review's site is not set on the business's listing. Set it with the upstream service, then respond again.",
  RESPOND_NOT_SUPPORTED:
    'Responses can be posted through the API only on Facebook, Google and Yelp. Answer this review on the site itself.',
  RESPONSE_ALREADY_EXISTS:
    'The review already has a response. Change it on the site itself if it needs changing.',
  RESPONSE_IN_PROGRESS:
    'An earlier response to this review is still being processed. Do not submit again: follow it with `listings-sync api reviews response-status <request-id>` (each sync also polls it).',
  RESPONSE_ALREADY_SUBMITTED:
    'A response to this review has already been posted. Nothing more to do.',
  RESPONSE_PREVIOUSLY_FAILED:
    'An earlier response to this review failed, and the upstream takes no other through the API. Post the response on the site itself.',
};

/** `CODE: upstream message` (verbatim), or the client's description when the upstream sent none. */
export function describeApiError(error: ApiError): string {
  return `${error.code}: ${error.upstreamMessage ?? error.message}`;
}

/** Prints an error as the workflow commands do and returns the exit code. */
export function reportError(io: WorkflowIo, error: unknown): number {
  if (error instanceof ApiError) {
    io.stderr(`listings-sync: ${redactText(describeApiError(error))}\n`);
    const advice = error.operation === 'respond_to_review' ? RESPOND_ADVICE[error.code] : undefined;
    if (advice) io.stderr(`  ${advice}\n`);
    return EXIT.fatal;
  }
  return printError(io, error);
}

/** A command's action: runs `body`, prints any error, sets the exit code. */
export function action<A extends unknown[]>(
  io: WorkflowIo,
  body: (...args: A) => Promise<number>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    let code: number;
    try {
      code = await body(...args);
    } catch (error) {
      code = reportError(io, error);
    }
    io.setExitCode(code);
  };
}

/** Resources of one command run, closed in reverse order of opening. */
export interface Session {
  config: Config;
  logger: Logger;
  credential: Credential;
  api: ApiClient;
  /** Opens (once) and returns the warehouse, its schema checked current. */
  warehouse(): Promise<Warehouse>;
  close(): Promise<void>;
}

export async function openSession(io: WorkflowIo, account: string | undefined): Promise<Session> {
  const config = io.loadConfig();
  const credential = chooseCredential(config, account);
  const logger = io.createLogger(config);
  const api = io.createApi(config, logger);
  let opened: Promise<Warehouse> | undefined;
  return {
    config,
    logger,
    credential,
    api,
    warehouse() {
      opened ??= (async () => {
        const warehouse = await io.openWarehouse(config);
        try {
          await requireCurrentSchema(warehouse);
        } catch (error) {
          await warehouse.close().catch(() => {});
          throw error;
        }
        return warehouse;
      })();
      return opened;
    },
    async close() {
      await api.close();
      if (opened) await (await opened.catch(() => undefined))?.close();
    },
  };
}

/** Runs `body` with a session, closing it afterwards. */
export async function withSession<T>(
  io: WorkflowIo,
  account: string | undefined,
  body: (session: Session) => Promise<T>,
): Promise<T> {
  const session = await openSession(io, account);
  try {
    return await body(session);
  } finally {
    await session.close();
  }
}

/** `--account NAME` on a command. */
export function accountOption(command: Command): Command {
  return command.option(
    '--account <name>',
    'the credential to act for (default: the only one configured)',
  );
}

/** Reads a JSON body from `--file F` (`-`: standard input). */
export async function readJsonBody(io: WorkflowIo, file: string | undefined): Promise<unknown> {
  if (file === undefined)
    throw new UsageError('a body is needed: give --file FILE (or --file - for standard input).');
  let text: string;
  try {
    text = file === '-' ? await io.readStdin() : await io.readFile(file);
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(
      `${file === '-' ? 'standard input' : file} is not valid JSON: ${(error as Error).message}`,
    );
  }
}

/** A positive whole number from a command-line argument. */
export function parseId(name: string, value: string): number {
  if (!/^\d{1,15}$/.test(value.trim()) || Number(value) < 1) {
    throw new UsageError(`${name} must be a positive whole number (got "${value}").`);
  }
  return Number(value);
}
