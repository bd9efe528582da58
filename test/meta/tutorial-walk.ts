/**
 * The sandbox tutorial, walked line by line as README.md and docs/running.md show it
 * (readme.test.ts, docs-walk.test.ts): `sandbox` starts in-process on a free port instead
 * of 4010, curl is pointed at it, and every `listings-sync` line must exit 0.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { expect } from 'vitest';
import { attachWarehouse, type Running, runCli, startCli } from '../helpers/cli.ts';
import { createTestWarehouse, type TestWarehouse } from '../helpers/database.ts';
import { parseCliLine, shellWords } from '../helpers/doc-commands.ts';

/**
 * The walk's warehouse, by directory: the tutorial's commands use the default
 * PGLITE_DATA_DIR, `./.data/pglite` in `dir`, and are handed this one for it (a migrated
 * in-memory PGlite: `migrate` finds nothing to do, as on a second walk).
 */
const walked = new Map<string, { warehouse: TestWarehouse; detach(): void }>();

/**
 * Runs `lines` in order in `dir` and returns what ran (`sandbox`, `curl` or the command's
 * name). `started` receives the sandbox as soon as it runs, for the suite to stop after.
 * `endWalk(dir)` closes the walk's warehouse.
 */
export async function walkSandboxTutorial(
  lines: string[],
  dir: string,
  started: (sandbox: Running) => void,
): Promise<string[]> {
  if (!walked.has(dir)) {
    const warehouse = await createTestWarehouse('pglite');
    const { detach } = attachWarehouse(join(dir, '.data/pglite'), warehouse);
    walked.set(dir, { warehouse, detach });
  }
  let origin = '';
  const ran: string[] = [];
  for (const line of lines) {
    if (line.startsWith('curl ')) {
      const words = shellWords(line.replaceAll('localhost:4010', origin.replace('http://', '')));
      const { stdout } = await promisify(execFile)(words[0] as string, words.slice(1), {
        cwd: dir,
      });
      expect(JSON.parse(stdout)).toHaveProperty('date');
      ran.push('curl');
      continue;
    }
    const parsed = parseCliLine(line);
    expect(parsed, line).not.toBeNull();
    const { env, args } = parsed as { env: Record<string, string>; args: string[] };
    if (args[0] === 'sandbox') {
      const port = args.indexOf('--port');
      if (port >= 0) args[port + 1] = '0';
      const sandbox = startCli(args, env, { cwd: dir });
      started(sandbox);
      await sandbox.waitForStdout(/Serving;/);
      origin = /base URL: (http:\/\/\S+)/.exec(sandbox.stdout())?.[1] ?? '';
      expect(origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(JSON.parse(await readFile(join(dir, 'credentials.json'), 'utf8'))).toHaveLength(2);
      ran.push('sandbox');
      continue;
    }
    const run = await runCli(args, env, { cwd: dir });
    // On failure, the line and what it printed say why.
    expect({
      line,
      code: run.code,
      output: run.code === 0 ? '' : run.stdout + run.stderr,
    }).toEqual({ line, code: 0, output: '' });
    ran.push(args[0] as string);
  }
  return ran;
}

/** The days of rank history in the walk's warehouse (`dir`/.data/pglite). */
export async function observedDays(dir: string): Promise<string[]> {
  const walk = walked.get(dir);
  if (!walk) throw new Error(`no tutorial was walked in ${dir}`);
  const days = await sql<{ day: string }>`
    select distinct observed_on as day from rank_observations order by 1`.execute(
    walk.warehouse.db,
  );
  return days.rows.map((r) => r.day);
}

/** Closes the warehouse of the walk in `dir`, if one was made. */
export async function endWalk(dir: string): Promise<void> {
  const walk = walked.get(dir);
  walked.delete(dir);
  walk?.detach();
  await walk?.warehouse.close();
}
