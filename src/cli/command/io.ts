/**
 * The one I/O context every command takes: where it prints, the environment its
 * configuration is read from, its clock, the signal that stops a long-running command,
 * and the exit code it leaves. `processIo()` (src/cli/process-io.ts) is the real one; a
 * test builds its own and runs `main(argv, io)` in-process.
 */
import type { ApiClient } from '../../api/index.ts';
import type { Config } from '../../config/index.ts';
import type { Logger } from '../../log.ts';
import type { Warehouse } from '../../warehouse/driver/connection.ts';
import type { WarehouseTarget } from '../../warehouse/driver/open.ts';

export interface CliIo {
  /** Standard output: what a command answers (tables, JSON, summaries). */
  stdout(text: string): void;
  /** Standard error: warnings, errors and log lines. */
  stderr(text: string): void;
  readonly isTTY: { readonly stdout: boolean; readonly stderr: boolean };
  /**
   * The process's standard error when it is a terminal: progress bars draw on it. Unset
   * off a terminal and in tests, where progress is a log line instead.
   */
  readonly terminal?: NodeJS.WriteStream;
  /** The environment the configuration is loaded from. */
  readonly env: Readonly<Record<string, string | undefined>>;
  now(): Date;
  /**
   * Aborted to stop a long-running command (serve, sandbox, demo, sync) cleanly: the
   * process entry aborts it on SIGTERM/SIGINT, a test by hand.
   */
  readonly signal: AbortSignal;
  /** A second stop: the run ends now (a sync rolls back the businesses in flight). */
  readonly stopNow?: AbortSignal;
  /** The whole of standard input (for `--file -`). */
  readStdin(): Promise<string>;
  /** Set by a command; `main` returns it (0 when unset). */
  exitCode?: number;
  /**
   * What a test substitutes: its own warehouse, already open (every command opens its
   * warehouse through src/cli/command/warehouse.ts), a faster API client, a quiet logger.
   * Unset in a process.
   */
  readonly services?: Partial<CliServices>;
}

export interface CliServices {
  /**
   * The warehouse for `target` (the configuration's, src/warehouse/driver/open.ts), already open;
   * undefined: open the target as usual. The command's close() must leave it open.
   */
  openWarehouse(config: Config, target: WarehouseTarget): Promise<Warehouse | undefined>;
  createApi(config: Config, logger: Logger): ApiClient;
  createLogger(config: Config): Logger;
  /** The time a command stamps its messages with (the Airbyte source's `emitted_at`). */
  now?(): number;
}

/** Resolves once `signal` is aborted (at once if it already is). */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener('abort', () => resolve(), { once: true }),
  );
}
