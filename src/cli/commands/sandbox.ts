/**
 * `listings-sync sandbox`: start the emulator, print how to reach it, serve until
 * `io.signal` is aborted (SIGINT/SIGTERM in a process), close cleanly.
 */
import { writeFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { type CliIo, untilAborted } from '../command/io.ts';
import { createCommandLogger } from '../command/logger.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';
import { dateOption, integerOption, numberOption } from '../options.ts';

export interface SandboxCommandOptions {
  port: number;
  host: string;
  seed: number;
  accounts: number;
  businesses: number;
  startDate: string;
  latency: number;
  jitter: number;
  errorRate: number;
  rateLimit?: number;
  resetRate: number;
  hangRate: number;
  malformedRate: number;
  errorsWith200?: boolean;
  credentialsOut?: string;
}

export function registerSandboxCommand(program: Command, io: CliIo): void {
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
        .argParser(dateOption('--start-date')),
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
    .action(async (options: SandboxCommandOptions) => {
      await runSandboxCommand(io, options);
    });
}

async function runSandboxCommand(io: CliIo, options: SandboxCommandOptions): Promise<void> {
  const config = loadCommandConfig(io, 'sandbox');
  const logger = createCommandLogger(io, config);
  const { startSandbox } = await import('../../sandbox/server.ts');
  const sandbox = await startSandbox({
    seed: options.seed,
    accounts: options.accounts,
    businessesPerAccount: options.businesses,
    startDate: options.startDate,
    host: options.host,
    port: options.port,
    logger,
    faults: {
      latencyMs: options.latency,
      jitterMs: options.jitter,
      errorRate: options.errorRate,
      rateLimitPerSecond: options.rateLimit ?? null,
      resetRate: options.resetRate,
      hangRate: options.hangRate,
      malformedRate: options.malformedRate,
      errorsWith200: options.errorsWith200 ?? false,
    },
  });
  // The one place a token is printed: the sandbox's own fake tokens, meant to be copied.
  const out = { write: (text: string) => io.stdout(text) };
  out.write(`Sandbox of the Business Listings Management Service API v2\n`);
  out.write(`  base URL: ${sandbox.baseUrl}   (API under ${sandbox.baseUrl}/api/v2)\n`);
  out.write(
    `  clock:    ${sandbox.today()}   (advance: curl -X POST -H 'content-type: application/json' -d '{"days":1}' ${sandbox.baseUrl}/__sandbox/clock/advance)\n`,
  );
  out.write(
    `  seed ${options.seed}, ${options.accounts} account(s) x ${options.businesses} businesses\n\n`,
  );
  for (const c of sandbox.credentials) {
    out.write(`  ${c.name}: user_email=${c.userEmail} auth_token=${c.authToken}\n`);
  }
  const first = sandbox.credentials[0];
  if (first) {
    out.write(
      `\nTry:\n  curl '${first.baseUrl}/api/v2/businesses.json?auth_token=${first.authToken}&user_email=${encodeURIComponent(first.userEmail)}'\n`,
    );
  }
  if (options.credentialsOut) {
    writeFileSync(options.credentialsOut, `${JSON.stringify(sandbox.credentials, null, 2)}\n`, {
      mode: 0o600,
    });
    out.write(`\nCredentials written to ${options.credentialsOut}\n`);
  }
  out.write('\nServing; stop with Ctrl-C.\n');
  logger.info({ baseUrl: sandbox.baseUrl }, 'sandbox started');

  await untilAborted(io.signal);
  await sandbox.close();
  logger.info('sandbox stopped');
}
