/**
 * What the workflow suites share: the `api` and `keywords` commands run in-process
 * through `main(argv, io)`, against a sandbox over HTTP and a test warehouse, with their
 * standard output, standard error and exit code collected.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Credential } from '../../src/api/index.ts';
import { createApiClient } from '../../src/api/index.ts';
import type { CliServices } from '../../src/cli/command/io.ts';
import { silentLogger } from '../../src/log.ts';
import type { Warehouse } from '../../src/warehouse/driver/connection.ts';
import { runCli } from '../helpers/cli.ts';

export interface CommandRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface WorkflowRunner {
  /** `args` after the program name, e.g. `['api', 'countries']`. */
  run(
    args: string[],
    options?: { stdin?: string; files?: Record<string, string> },
  ): Promise<CommandRun>;
  /** A file in the runner's own directory, for `--file`. */
  file(name: string, content: string): string;
}

export function workflowRunner(
  warehouse: Warehouse,
  credentials: readonly Credential[],
  services: Partial<CliServices> = {},
): WorkflowRunner {
  const dir = mkdtempSync(join(tmpdir(), 'ls-workflows-'));
  const credentialsFile = join(dir, 'credentials.json');
  writeFileSync(credentialsFile, JSON.stringify(credentials));
  const file = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };
  return {
    file,
    async run(args, options = {}) {
      // `io.env` holds only the credentials file: the test owns the warehouse and client.
      const ran = await runCli(
        args,
        { LISTINGS_CREDENTIALS_FILE: credentialsFile, LOG_LEVEL: 'silent' },
        {
          ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
          services: {
            // A command's close() leaves the test's warehouse open.
            openWarehouse: async () => ({ ...warehouse, close: async () => {} }),
            createApi: () =>
              createApiClient({
                timeouts: { connectMs: 2000, headersMs: 2000, bodyMs: 2000 },
                retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 10, maxRetryAfterMs: 2000 },
                logger: silentLogger(),
              }),
            createLogger: () => silentLogger(),
            ...services,
          },
        },
      );
      return { code: ran.code ?? 1, stdout: ran.stdout, stderr: ran.stderr };
    },
  };
}

/** A business input the sandbox accepts, with names for its references. */
export function businessBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'Workflow Plumbing',
    street: '100 Congress Ave',
    city: 'Austin',
    state: 'TX',
    country: 'United States',
    sub_category: 'Plumbers',
    postal_code: '78701',
    phone: '512-555-0199',
    description: 'A family business fixing pipes across the city since 1990. '.repeat(5),
    ...overrides,
  };
}
