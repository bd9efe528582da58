/**
 * What the workflow suites share: the `api` and `keywords` commands run in-process
 * through commander, against a sandbox over HTTP and a test warehouse, with their
 * standard output, standard error and exit code collected.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { createApiClient } from '../../src/api/index.ts';
import type { Credential } from '../../src/api/types.ts';
import { loadConfig } from '../../src/config/index.ts';
import { silentLogger } from '../../src/log.ts';
import type { Warehouse } from '../../src/warehouse/connection.ts';
import type { WorkflowIo } from '../../src/workflows/command-context.ts';
import { registerWorkflowCommands } from '../../src/workflows/register.ts';

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
  extra: Partial<WorkflowIo> = {},
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
      let stdout = '';
      let stderr = '';
      let code = 0;
      const io: WorkflowIo = {
        loadConfig: () =>
          loadConfig({ LISTINGS_CREDENTIALS_FILE: credentialsFile, LOG_LEVEL: 'silent' }),
        // The test owns the warehouse: a command's close() leaves it open.
        openWarehouse: async () => ({ ...warehouse, close: async () => {} }),
        createApi: () =>
          createApiClient({
            timeouts: { connectMs: 2000, headersMs: 2000, bodyMs: 2000 },
            retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 10, maxRetryAfterMs: 2000 },
            logger: silentLogger(),
          }),
        createLogger: () => silentLogger(),
        stdout: (text) => {
          stdout += text;
        },
        stderr: (text) => {
          stderr += text;
        },
        readStdin: async () => options.stdin ?? '',
        readFile: async (path) => (await import('node:fs/promises')).readFile(path, 'utf8'),
        setExitCode: (value) => {
          code = value;
        },
        ...extra,
      };
      const program = new Command()
        .name('listings-sync')
        .exitOverride()
        .configureOutput({
          writeOut: (text) => {
            stdout += text;
          },
          writeErr: (text) => {
            stderr += text;
          },
        });
      registerWorkflowCommands(program, io);
      try {
        await program.parseAsync(['node', 'listings-sync', ...args]);
      } catch (error) {
        if (!(error instanceof CommanderError)) throw error;
        code = error.exitCode === 0 ? 0 : 2;
      }
      return { code, stdout, stderr };
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
