#!/usr/bin/env -S node --max-semi-space-size=8 --max-old-space-size=256
import { readFileSync } from 'node:fs';
/**
 * The command line: migrate | sync | serve | alerts | sandbox | demo | report | api.
 *
 * Exit codes (README.md, "Commands"): 0 success, 1 fatal (bad config, database
 * unreachable), 2 usage, 3 partial (some credentials, businesses or records failed; the
 * rest committed).
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { createCliLogger, loadCliConfig } from './cli-config.ts';
import { ConfigError, environmentHelp } from './config/index.ts';
import { redactText } from './log.ts';
import { registerReportCommand } from './report/command.ts';
import { parseShard } from './sync/shard.ts';
import { registerWorkflowCommands } from './workflows/register.ts';

export const EXIT = { ok: 0, fatal: 1, usage: 2, partial: 3 } as const;

export function integerOption(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
      throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}.`);
    }
    return parsed;
  };
}

function numberOption(name: string, min: number, max = Number.POSITIVE_INFINITY) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < min || parsed > max) {
      throw new InvalidArgumentError(
        max === Number.POSITIVE_INFINITY
          ? `${name} must be a number of at least ${min}.`
          : `${name} must be a number from ${min} to ${max}.`,
      );
    }
    return parsed;
  };
}

function dateOption(value: string): string {
  // Date.parse rolls 2026-02-30 over to March: only a date that reads back the same is one.
  const at = /^\d{4}-\d{2}-\d{2}$/.test(value) ? new Date(`${value}T00:00:00Z`) : null;
  if (!at || Number.isNaN(at.getTime()) || at.toISOString().slice(0, 10) !== value) {
    throw new InvalidArgumentError('--start-date must be a calendar date as YYYY-MM-DD.');
  }
  return value;
}

function buildProgram(): Command {
  const program = new Command()
    .name('listings-sync')
    .description(
      'Keeps a PostgreSQL warehouse in step with the Business Listings Management Service API v2.',
    )
    .version(packageVersion(), '-V, --version', 'print the version')
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)');

  program
    .command('sandbox')
    .description('Run an emulator of the upstream API, with generated data, a clock and faults.')
    .addOption(
      new Option('--port <port>', 'port to listen on (0: any free port)')
        .default(4010)
        .argParser(integerOption('--port', 0, 65535)),
    )
    .addOption(new Option('--host <host>', 'address to listen on').default('127.0.0.1'))
    .addOption(
      new Option('--seed <seed>', 'seed of the generated data')
        .default(1)
        .argParser(integerOption('--seed', 0)),
    )
    .addOption(
      new Option('--accounts <n>', 'accounts to generate')
        .default(2)
        .argParser(integerOption('--accounts', 1, 1000)),
    )
    .addOption(
      new Option('--businesses <n>', 'businesses per account')
        .default(25)
        .argParser(integerOption('--businesses', 0, 1_000_000)),
    )
    .addOption(
      new Option('--start-date <date>', "the sandbox clock's first day (YYYY-MM-DD)")
        .default('2026-01-01')
        .argParser(dateOption),
    )
    .addOption(
      new Option('--latency <ms>', 'added latency per request, in milliseconds')
        .default(0)
        .argParser(numberOption('--latency', 0)),
    )
    .addOption(
      new Option('--jitter <ms>', 'random extra latency, up to this many milliseconds')
        .default(0)
        .argParser(numberOption('--jitter', 0)),
    )
    .addOption(
      new Option('--error-rate <fraction>', 'fraction of requests answered with 500/502/503')
        .default(0)
        .argParser(numberOption('--error-rate', 0, 1)),
    )
    .addOption(
      new Option(
        '--rate-limit <rps>',
        'requests per second per account above which 429 is answered',
      ).argParser(numberOption('--rate-limit', 0)),
    )
    .addOption(
      new Option('--reset-rate <fraction>', 'fraction of requests whose connection is reset')
        .default(0)
        .argParser(numberOption('--reset-rate', 0, 1)),
    )
    .addOption(
      new Option('--hang-rate <fraction>', 'fraction of requests that never answer')
        .default(0)
        .argParser(numberOption('--hang-rate', 0, 1)),
    )
    .addOption(
      new Option('--malformed-rate <fraction>', 'fraction of list records served malformed')
        .default(0)
        .argParser(numberOption('--malformed-rate', 0, 1)),
    )
    .addOption(
      new Option(
        '--errors-with-200',
        'answer errors with HTTP 200, as the upstream may (docs/upstream.md, "Errors")',
      ),
    )
    .addOption(
      new Option(
        '--credentials-out <file>',
        'write a credentials file (the LISTINGS_CREDENTIALS_FILE format) here',
      ),
    )
    .action(async (options) => {
      const config = loadCliConfig(undefined, 'sandbox');
      const logger = createCliLogger(config);
      const { runSandboxCommand } = await import('./sandbox/command.ts');
      await runSandboxCommand(options, logger);
    });

  program
    .command('migrate')
    .description('Bring the warehouse schema up to date (safe to run from several pods at once).')
    .action(async () => {
      const config = loadCliConfig(undefined, 'migrate');
      const logger = createCliLogger(config);
      const { openConfiguredWarehouse, describeWarehouse } = await import('./warehouse/open.ts');
      const { migrateToLatest } = await import('./warehouse/migrate.ts');
      // A migration may rewrite a year of history (0005): no statement timeout here. The
      // connect and lock timeouts still hold.
      const warehouse = await openConfiguredWarehouse({ ...config, databaseStatementTimeoutMs: 0 });
      try {
        const { applied } = await migrateToLatest(warehouse.db);
        logger.info({ applied }, 'migrations applied');
        process.stdout.write(
          applied.length
            ? `Applied ${applied.length} migration(s) to ${describeWarehouse(config)}: ${applied.join(', ')}\n`
            : `${describeWarehouse(config)} is already up to date.\n`,
        );
      } finally {
        await warehouse.close();
      }
    });

  program
    .command('sync')
    .description('Pull every configured credential into the warehouse once.')
    .option(
      '--streams <list>',
      'comma-separated streams: businesses, listings, reviews, rankings, keywords, reference',
    )
    .option('--account <name...>', 'only these credentials (by name)')
    .addOption(
      new Option(
        '--shard <I/N>',
        'only businesses in shard I of N (0-based), for parallel pods',
      ).argParser((value: string) => {
        try {
          return parseShard(value);
        } catch (error) {
          throw new InvalidArgumentError((error as Error).message);
        }
      }),
    )
    .action(async (options) => {
      const config = loadCliConfig(undefined, 'sync');
      const logger = createCliLogger(config);
      const { runSyncCommand } = await import('./sync/command.ts');
      process.exitCode = await runSyncCommand(config, options, logger);
    });

  program
    .command('serve')
    .description(
      'Run the sync on SYNC_SCHEDULE, take signed webhooks, send alerts; health and metrics on PORT.',
    )
    .action(async () => {
      const config = loadCliConfig(undefined, 'serve');
      const logger = createCliLogger(config);
      const { runServeCommand } = await import('./serve/command.ts');
      process.exitCode = await runServeCommand(config, logger);
    });

  program
    .command('alerts')
    .description('List recent alerts (every kind: what changed, the business, delivery per sink).')
    .option('--pending', 'only alerts not yet delivered to every sink')
    .addOption(
      new Option('--limit <n>', 'how many, most recent first')
        .default(50)
        .argParser(integerOption('--limit', 1, 100_000)),
    )
    .action(async (options: { pending?: boolean; limit: number }) => {
      const config = loadCliConfig(undefined, 'alerts');
      const { runAlertsCommand } = await import('./alerts/alerts-command.ts');
      process.exitCode = await runAlertsCommand(config, options);
    });

  program
    .command('demo')
    .description(
      'Show the whole product on this machine: a sandbox, an embedded warehouse, a report.',
    )
    .action(async () => {
      const config = loadCliConfig(undefined, 'demo');
      const logger = createCliLogger(config);
      const { runDemoCommand } = await import('./demo.ts');
      process.exitCode = await runDemoCommand(config, logger);
    });

  program
    .command('check')
    .description(
      'Check the configuration, each credential (one cheap authenticated read) and the warehouse (reachable, migrated); touches no data.',
    )
    .action(async () => {
      const { runCheckCommand } = await import('./sync/check-command.ts');
      process.exitCode = await runCheckCommand((text) => process.stdout.write(text));
    });

  program
    .command('config')
    .description(
      'Print the effective configuration and where each value comes from (secrets masked).',
    )
    .action(async () => {
      const config = loadCliConfig(() => {}, 'config'); // its warnings are part of the output
      const { renderConfig } = await import('./config-command.ts');
      process.stdout.write(renderConfig(config));
    });

  program
    .command('runs')
    .description('List recent sync runs: status, duration, counts and what failed.')
    .addOption(
      new Option('--limit <n>', 'how many, most recent first')
        .default(20)
        .argParser(integerOption('--limit', 1, 10_000)),
    )
    .action(async (options: { limit: number }) => {
      const config = loadCliConfig(undefined, 'runs');
      const { openConfiguredWarehouse, requireCurrentSchema } = await import('./warehouse/open.ts');
      const { readRecentRuns, renderRuns } = await import('./sync/runs-command.ts');
      const warehouse = await openConfiguredWarehouse(config, 'read');
      try {
        await requireCurrentSchema(warehouse);
        process.stdout.write(`Sync runs in ${warehouse.target.description}:\n`);
        process.stdout.write(renderRuns(await readRecentRuns(warehouse.db, options.limit)));
      } finally {
        await warehouse.close();
      }
    });

  registerRawZoneCommands(program);
  registerReportCommand(program);
  registerWorkflowCommands(program);
  addEnvironmentHelp(program);

  return program;
}

// ---------------------------------------------------------------------------------------
// The raw zone (issue 20): `replay`, `raw show`, `raw stats`. Kept together so that they
// move into src/cli/commands/ as one piece.

function calendarDate(flag: string) {
  return (value: string): string => {
    const at = /^\d{4}-\d{2}-\d{2}$/.test(value) ? new Date(`${value}T00:00:00Z`) : null;
    if (!at || Number.isNaN(at.getTime()) || at.toISOString().slice(0, 10) !== value) {
      throw new InvalidArgumentError(`${flag} must be a calendar date as YYYY-MM-DD.`);
    }
    return value;
  };
}

function registerRawZoneCommands(program: Command): void {
  program
    .command('replay')
    .description(
      'Rebuild the warehouse from its raw zone into a fresh schema of the same database (alerts recomputed, never delivered).',
    )
    .addOption(
      new Option('--from <date>', 'first night (UTC), YYYY-MM-DD').argParser(
        calendarDate('--from'),
      ),
    )
    .addOption(
      new Option('--to <date>', 'last night (UTC), YYYY-MM-DD').argParser(calendarDate('--to')),
    )
    .option('--account <name>', 'only this credential')
    .addOption(
      new Option('--business <id>', 'only this business').argParser(integerOption('--business', 0)),
    )
    .requiredOption('--into <schema>', 'the new schema to build (must not hold tables)')
    .action(async (options) => {
      const config = loadCliConfig(undefined, 'replay');
      const logger = createCliLogger(config);
      const { runReplayCommand } = await import('./sync/replay-command.ts');
      process.exitCode = await runReplayCommand(config, options, logger);
    });

  const raw = program
    .command('raw')
    .description('What the upstream answered, from the raw zone: `raw show`, `raw stats`.');
  raw
    .command('show')
    .description('Print what the upstream answered about a business on a night.')
    .addOption(
      new Option('--business <id>', 'the business')
        .makeOptionMandatory()
        .argParser(integerOption('--business', 0)),
    )
    .addOption(
      new Option('--date <date>', 'the night (UTC), YYYY-MM-DD; default the latest kept').argParser(
        calendarDate('--date'),
      ),
    )
    .option('--operation <name>', 'only this operation, such as list_listings')
    .option('--raw', 'the bodies byte for byte, without headers')
    .action(
      async (options: { business: number; date?: string; operation?: string; raw?: boolean }) => {
        const config = loadCliConfig(undefined, 'raw');
        const { openConfiguredWarehouse, requireCurrentSchema } = await import(
          './warehouse/open.ts'
        );
        const { renderRawShow } = await import('./raw/show-command.ts');
        const warehouse = await openConfiguredWarehouse(config, 'read');
        try {
          await requireCurrentSchema(warehouse);
          const text = await renderRawShow(warehouse.db, {
            businessId: options.business,
            ...(options.date ? { date: options.date } : {}),
            ...(options.operation ? { operation: options.operation } : {}),
            ...(options.raw ? { raw: true } : {}),
          });
          if (text === null) {
            throw new ConfigError(
              `The raw zone holds no read of business ${options.business}` +
                `${options.date ? ` on ${options.date}` : ''}${options.operation ? ` by ${options.operation}` : ''}.`,
            );
          }
          process.stdout.write(text);
        } finally {
          await warehouse.close();
        }
      },
    );
  raw
    .command('stats')
    .description("Print the raw zone's size, bytes per night and what content addressing saved.")
    .action(async () => {
      const config = loadCliConfig(undefined, 'raw');
      const { openConfiguredWarehouse, requireCurrentSchema } = await import('./warehouse/open.ts');
      const { readRawStats, renderRawStats } = await import('./raw/show-command.ts');
      const warehouse = await openConfiguredWarehouse(config, 'read');
      try {
        await requireCurrentSchema(warehouse);
        process.stdout.write(renderRawStats(await readRawStats(warehouse.db)));
      } finally {
        await warehouse.close();
      }
    });
}
// ---------------------------------------------------------------------------------------

/** Each command's `--help` lists the variables it reads (src/config/settings.ts; subcommands inherit). */
function addEnvironmentHelp(program: Command): void {
  const visit = (command: Command, help: string) => {
    command.addHelpText('after', help);
    for (const sub of command.commands) visit(sub, help);
  };
  for (const command of program.commands) visit(command, environmentHelp(command.name()));
  program.addHelpText(
    'after',
    `${environmentHelp()}\n\`listings-sync config\` shows each one's value and where it came from.\n`,
  );
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return String(pkg.version);
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end through here with exit code 0.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`listings-sync: ${error.message}\n`);
      return EXIT.fatal;
    }
    if ((error as { code?: unknown }).code === 'USAGE') {
      process.stderr.write(`listings-sync: ${(error as Error).message}\n`);
      return EXIT.usage;
    }
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`listings-sync: ${redactText(message)}\n`);
    return EXIT.fatal;
  }
}

if (import.meta.main) {
  main(process.argv).then((code) => {
    process.exitCode = code;
  });
}
