/**
 * `listings-sync sandbox`: start the emulator, print how to reach it, serve until
 * SIGINT/SIGTERM, close cleanly.
 */
import { writeFileSync } from 'node:fs';
import type { Logger } from '../log.ts';
import { startSandbox } from './server.ts';

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

export async function runSandboxCommand(
  options: SandboxCommandOptions,
  logger: Logger,
): Promise<void> {
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
  const out = process.stdout;
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

  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await sandbox.close();
  logger.info('sandbox stopped');
}
