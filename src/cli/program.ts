/**
 * The command line: migrate | sync | serve | alerts | sandbox | demo | report | check |
 * config | runs | api | keywords, one file each under src/cli/commands/.
 *
 * `main(argv, io)` runs a command with the I/O context it is given (src/cli/command/io.ts) and
 * returns its exit code (README.md, "Commands": 0 success, 1 fatal, 2 usage, 3 partial);
 * tests call it in-process. The process entry is src/cli/main.ts.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { ConfigError } from '../config/index.ts';
import { withLineage } from '../lineage/run.ts';
import { lineageSettings } from '../lineage/settings.ts';
import { createLogger } from '../log.ts';
import { startTracing, type Tracing, type TracingOptions } from '../tracing.ts';
import { EXIT } from './command/exit-codes.ts';
import type { CliIo } from './command/io.ts';
import { printError } from './command/print-error.ts';
import { environmentHelp } from './command/settings-bridge.ts';
import { registerAirbyteCommand } from './commands/airbyte.ts';
import { registerAlertsCommand } from './commands/alerts.ts';
import { registerApiCommand } from './commands/api.ts';
import { registerCheckCommand } from './commands/check.ts';
import { registerConfigCommand } from './commands/config.ts';
import { registerDemoCommand } from './commands/demo.ts';
import { registerKeywordsCommand } from './commands/keywords.ts';
import { registerMigrateCommand } from './commands/migrate.ts';
import { registerRawCommand } from './commands/raw.ts';
import { registerReplayCommand } from './commands/replay.ts';
import { registerReportCommand } from './commands/report.ts';
import { registerRunsCommand } from './commands/runs.ts';
import { registerSandboxCommand } from './commands/sandbox.ts';
import { registerServeCommand } from './commands/serve.ts';
import { registerSyncCommand } from './commands/sync.ts';
import { registerWarehouseCommand } from './commands/warehouse.ts';

/** The commands, in the order `--help` lists them. */
const COMMANDS = [
  registerSandboxCommand,
  registerMigrateCommand,
  registerSyncCommand,
  registerServeCommand,
  registerAlertsCommand,
  registerDemoCommand,
  registerCheckCommand,
  registerConfigCommand,
  registerRunsCommand,
  registerReportCommand,
  registerApiCommand,
  registerKeywordsCommand,
  registerReplayCommand,
  registerRawCommand,
  registerWarehouseCommand,
  registerAirbyteCommand,
];

export function buildProgram(io: CliIo): Command {
  const program = new Command()
    .name('listings-sync')
    .description(
      'Keeps a PostgreSQL warehouse in step with the Business Listings Management Service API v2.',
    )
    .version(packageVersion(), '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout(text),
      writeErr: (text) => io.stderr(text),
      getOutHelpWidth: () => 80,
      getErrHelpWidth: () => 80,
      getOutHasColors: () => false,
      getErrHasColors: () => false,
    })
    .showHelpAfterError('(run with --help for usage)');
  for (const register of COMMANDS) register(program, io);
  addEnvironmentHelp(program);
  return program;
}

/** Each command's `--help` ends with the variables it reads (subcommands inherit). */
function addEnvironmentHelp(program: Command): void {
  const visit = (command: Command, name: string) => {
    command.addHelpText('after', environmentHelp(name));
    for (const sub of command.commands) visit(sub, name);
  };
  for (const command of program.commands) visit(command, command.name());
  program.addHelpText('after', environmentHelp());
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  return String(pkg.version);
}

/**
 * Runs `argv` (as `process.argv`: node, script, then the arguments) and returns the exit
 * code; every error is printed on `io.stderr`, none escapes.
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  // Traces only when the environment asks (docs/running.md, "Traces"): a command without
  // OTEL_EXPORTER_OTLP_ENDPOINT neither loads the SDK nor makes a span.
  let tracing: Tracing | undefined;
  try {
    tracing = await startTracing(io.env, packageVersion(), { warn: tracingWarning(io) });
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return printError(io, new ConfigError(error.message));
  }
  try {
    // Lineage events only when the environment asks (docs/lineage.md); a bad setting is exit 1.
    const lineage = lineageSettings(io.env, packageVersion());
    await withLineage(lineage, () => buildProgram(io).parseAsync(airbyteCall(argv)));
    return io.exitCode ?? EXIT.ok;
  } catch (error) {
    return printError(io, error);
  } finally {
    // What is buffered goes out before the process exits (bounded by the export timeout).
    await tracing?.shutdown().catch(() => {});
  }
}

/**
 * Where a failed trace export is said: a warn line on the command's standard error, as
 * its logger writes (the configuration is not loaded yet; LOG_LEVEL=error or silent
 * quiets it).
 */
function tracingWarning(io: CliIo): TracingOptions['warn'] {
  const level = io.env.LOG_LEVEL?.trim().toLowerCase();
  if (level === 'error' || level === 'fatal' || level === 'silent') return undefined;
  return (message, fields) => {
    createLogger({
      level: 'warn',
      human: io.isTTY.stderr,
      destination: { write: (line: string) => io.stderr(line) },
    }).warn(fields, message);
  };
}

/**
 * Airbyte runs a source image as `IMAGE spec`, `IMAGE check --config F`, `IMAGE discover …`
 * and `IMAGE read …` (docs/airbyte.md, "As Airbyte runs it"): those are `airbyte …` here.
 * `check` is also the program's own command; with `--config` it is Airbyte's.
 */
export function airbyteCall(argv: readonly string[]): string[] {
  const [node = 'node', script = 'listings-sync', command, ...rest] = argv;
  const airbyte =
    command === 'spec' ||
    command === 'discover' ||
    command === 'read' ||
    (command === 'check' && rest.some((arg) => arg === '--config' || arg.startsWith('--config=')));
  return airbyte ? [node, script, 'airbyte', command as string, ...rest] : [...argv];
}
