/** `listings-sync demo` (`npm start`): the whole product on this machine (src/demo/demo.ts). */
import { constants } from 'node:os';
import type { Command } from 'commander';
import {
  DEMO_BUSINESSES_PER_ACCOUNT,
  DEMO_DAYS,
  MAX_DEMO_BUSINESSES_PER_ACCOUNT,
  MAX_DEMO_DAYS,
} from '../../demo/size.ts';
import { EXIT } from '../command/exit-codes.ts';
import type { CliIo } from '../command/io.ts';
import { createCommandLogger } from '../command/logger.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';
import { integerOption } from '../options.ts';

export function registerDemoCommand(program: Command, io: CliIo): void {
  program
    .command('demo')
    .description(
      'Show the whole product on this machine: a sandbox, an embedded warehouse, a report.',
    )
    .option(
      '--days <n>',
      `days simulated after the first sync, ending on the last whole day (default ${DEMO_DAYS})`,
      integerOption('--days', 1, MAX_DEMO_DAYS),
    )
    .option(
      '--businesses <n>',
      `businesses of each of the demo's two accounts (default ${DEMO_BUSINESSES_PER_ACCOUNT})`,
      integerOption('--businesses', 1, MAX_DEMO_BUSINESSES_PER_ACCOUNT),
    )
    .option(
      '--fresh',
      "delete the demo's stored warehouse and build a new one (an existing demo refuses --days and --businesses that would shape another)",
    )
    .action(async (options: { days?: number; businesses?: number; fresh?: boolean }) => {
      const config = loadCommandConfig(io, 'demo');
      const logger = createCommandLogger(io, config);
      const { DEMO_DATA_DIR, runDemo } = await import('../../demo/demo.ts');
      // A test running the command in-process hands it the warehouse of the demo's directory.
      const given = config.databaseUrl
        ? undefined
        : await io.services?.openWarehouse?.(config, {
            pgliteDataDir: DEMO_DATA_DIR,
            description: `the demo's embedded PGlite database in ${DEMO_DATA_DIR}`,
            demo: true,
          });
      const result = await runDemo(config, logger, {
        ...(given ? { warehouse: given } : {}),
        ...(options.days === undefined ? {} : { days: options.days }),
        ...(options.businesses === undefined ? {} : { businessesPerAccount: options.businesses }),
        ...(options.fresh ? { fresh: true } : {}),
        // Its clock, not today's date: the demo ends on the last whole day before it
        // (src/demo/demo.ts), so nothing it stores is dated after the clock.
        clock: () => io.now(),
        write: (line) => io.stdout(`${line}\n`),
        signal: io.signal,
        ...(io.terminal ? { terminal: io.terminal } : {}),
      });
      // A demo stopped by a signal exits as a shell reports a process that signal ended
      // (130 for Ctrl-C); a day that did not sync cleanly, or another stop, is partial.
      if (result.stopped) io.exitCode = stoppedExitCode(result.stopped.by);
      else
        io.exitCode = result.syncs.every((s) => s.status === 'succeeded') ? EXIT.ok : EXIT.partial;
    });
}

/** 128 + the signal's number (SIGINT 130, SIGTERM 143); a stop by no signal (EPIPE): partial. */
export function stoppedExitCode(by: string): number {
  const number = (constants.signals as Record<string, number | undefined>)[by];
  return number === undefined ? EXIT.partial : 128 + number;
}
