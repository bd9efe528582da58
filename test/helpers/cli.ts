/**
 * Running `listings-sync` from a test. In-process by default: `runCli`/`startCli` call
 * `main(argv, io)` with an I/O context that holds only the environment a test gives it
 * and collects standard output and error; `stop()` aborts the command's signal as
 * SIGTERM would. `spawnCli` runs a real child process, for the tests where a process is
 * the point (signals, kill -9, a real exit code): those are the `*.e2e.test.ts` files.
 * `startSyncFixture` sets up what a syncing command needs: sandbox, credentials file and
 * a warehouse of the test's own.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { CliIo, CliServices } from '../../src/cli/command/io.ts';
import { main } from '../../src/cli/program.ts';
import {
  type RunningSandbox,
  type SandboxOptions,
  startSandbox,
} from '../../src/sandbox/server.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/driver/connection.ts';
import {
  createPgliteDataDir,
  createTestWarehouse,
  databaseEnv,
  type TestBackend,
  type TestWarehouse,
} from './database.ts';
import { runSharedDir } from './temporary-root.ts';

const CLI = join(import.meta.dirname, '../../src/cli/main.ts');

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** The working directory (default: this process's), for commands that read `./.data`. */
  cwd?: string;
  /** Standard input, for `--file -`. */
  stdin?: string;
  /** The command's clock (default: the wall clock). */
  now?: () => Date;
  /** What the test substitutes for the configured warehouse, client or logger. */
  services?: Partial<CliServices>;
}

/** A command running in-process. */
export interface Running {
  done: Promise<Finished>;
  stdout(): string;
  stderr(): string;
  /** What SIGTERM does to the process: aborts the command's signal. */
  stop(signal?: NodeJS.Signals): void;
  /** Resolves with the first match of `pattern` in standard output. */
  waitForStdout(pattern: RegExp): Promise<RegExpExecArray>;
  /** Resolves once standard error contains `text`. */
  waitForStderr(text: string): Promise<void>;
}

/**
 * In-process commands share the process's working directory: commands that overlap (a
 * sandbox serving while others run) must be given the same one. The test's own directory
 * comes back when the last of them ends, whatever order they end in.
 */
let inDirectory = 0;
let home = process.cwd();

function enterDirectory(cwd: string | undefined): void {
  if (!cwd) return;
  if (inDirectory++ === 0) home = process.cwd();
  process.chdir(cwd);
}

function leaveDirectory(cwd: string | undefined): void {
  if (cwd && --inDirectory === 0) process.chdir(home);
}

export function startCli(
  args: string[],
  env: Record<string, string>,
  options: CliOptions = {},
): Running {
  let stdout = '';
  let stderr = '';
  const waiters: {
    stream: 'stdout' | 'stderr';
    pattern: RegExp;
    resolve(match: RegExpExecArray): void;
    reject(error: Error): void;
  }[] = [];
  const notify = () => {
    for (const waiter of [...waiters]) {
      const match = waiter.pattern.exec(waiter.stream === 'stdout' ? stdout : stderr);
      if (match) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(match);
      }
    }
  };
  const stop = new AbortController();
  const services: Partial<CliServices> = {
    openWarehouse: async (_config, target) => attachedTo(target.pgliteDataDir),
    ...options.services,
  };
  const io: CliIo = {
    stdout: (text) => {
      stdout += text;
      notify();
    },
    stderr: (text) => {
      stderr += text;
      notify();
    },
    isTTY: { stdout: false, stderr: false },
    env: { LOG_LEVEL: 'info', ...env },
    now: options.now ?? (() => new Date()),
    signal: stop.signal,
    readStdin: async () => options.stdin ?? '',
    services,
  };
  const run = async (): Promise<Finished> => {
    enterDirectory(options.cwd);
    try {
      const code = await main(['node', 'listings-sync', ...args], io);
      return { code, signal: null, stdout, stderr };
    } finally {
      leaveDirectory(options.cwd);
    }
  };
  const done = run();
  let ended = false;
  const ending = () => {
    ended = true;
    for (const waiter of waiters.splice(0)) {
      waiter.reject(
        new Error(`the command ended before printing ${waiter.pattern} on ${waiter.stream}`),
      );
    }
  };
  done.then(ending, ending);
  const waitFor = (stream: 'stdout' | 'stderr', pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const match = pattern.exec(stream === 'stdout' ? stdout : stderr);
      if (match) resolve(match);
      else if (ended)
        reject(new Error(`the command ended before printing ${pattern} on ${stream}`));
      else waiters.push({ stream, pattern, resolve, reject });
    });
  return {
    done,
    stdout: () => stdout,
    stderr: () => stderr,
    stop: (signal = 'SIGTERM') => stop.abort(signal),
    waitForStdout: (pattern) => waitFor('stdout', pattern),
    waitForStderr: async (text) => {
      await waitFor('stderr', new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    },
  };
}

/**
 * Warehouses a test has open, by the PGLITE_DATA_DIR that names them in a command's
 * environment: a command run in-process with that directory gets the open warehouse
 * (`io.services.openWarehouse`) instead of starting a PGlite of its own on the directory,
 * which costs about 0.7 s of CPU and is not what such a test is about. Tests whose point is
 * the directory itself (locks, `warehouse copy`, the demo's own files) never register one.
 */
const inProcessWarehouses = new Map<string, Warehouse>();

/**
 * Commands whose warehouse is the PGlite directory `dir` (PGLITE_DATA_DIR, or its default
 * `./.data/pglite` in the command's working directory) use `warehouse` until `detach()`.
 */
export function attachWarehouse(
  dir: string,
  warehouse: Warehouse,
  options: {
    /**
     * Make `dir` read as a database's directory (the PG_VERSION file a data directory
     * holds), for a test of which warehouse a command picks by what is on disk (the
     * demo's, src/warehouse/driver/open.ts, `resolveWarehouse`).
     */
    onDisk?: boolean;
  } = {},
): { detach(): void } {
  const key = resolve(dir);
  if (options.onDisk) {
    mkdirSync(key, { recursive: true });
    writeFileSync(join(key, 'PG_VERSION'), '17\n');
  }
  inProcessWarehouses.set(key, warehouse);
  return {
    detach: () => {
      if (inProcessWarehouses.get(key) === warehouse) inProcessWarehouses.delete(key);
    },
  };
}

/** The warehouse attached to `dir`, as seen from the command's working directory. */
async function attachedTo(dir: string | undefined): Promise<Warehouse | undefined> {
  const attached = dir === undefined ? undefined : inProcessWarehouses.get(resolve(dir));
  return attached && borrowed(attached);
}

/** The warehouse as a command sees it: the command's close() leaves it open for the test. */
function borrowed(warehouse: Warehouse): Warehouse {
  return { ...warehouse, close: async () => {} };
}

export function runCli(
  args: string[],
  env: Record<string, string>,
  options: CliOptions = {},
): Promise<Finished> {
  return startCli(args, env, options).done;
}

/**
 * A real `listings-sync` process on this Node, with only the environment a test gives it
 * and the run's temporary directory (TMPDIR, test/helpers/temporary-root.ts).
 */
export interface Spawned {
  child: ChildProcess;
  done: Promise<Finished>;
  /** Standard output so far. */
  stdout(): string;
}

/**
 * The environment that keeps a CLI process's compile cache (src/cli/compile-cache.ts) in
 * the run's own temporary directory (made by this user, mode 0700, removed at the end),
 * never in the home of whoever runs the tests nor in a directory other users can write.
 * Every test that starts the CLI as a process gives it this.
 */
export function cliCacheEnv(): { XDG_CACHE_HOME: string } {
  return { XDG_CACHE_HOME: join(runSharedDir(), 'xdg-cache') };
}

export function spawnCli(
  args: string[],
  env: Record<string, string>,
  options: { cwd?: string } = {},
): Spawned {
  const child = spawn(process.execPath, [CLI, ...args], {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: {
      PATH: process.env['PATH'] ?? '',
      TMPDIR: tmpdir(),
      ...cliCacheEnv(),
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const done = new Promise<Finished>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done, stdout: () => stdout };
}

/** Resolves with the first match of `pattern` in the child's standard output. */
export function waitForStdout(child: ChildProcess, pattern: RegExp): Promise<RegExpExecArray> {
  return waitForStream(child, 'stdout', pattern);
}

/** Resolves once the child's standard error contains `text`. */
export async function waitForStderr(child: ChildProcess, text: string): Promise<void> {
  await waitForStream(child, 'stderr', new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
}

/** Output arrives in chunks as the child writes it: no polling, no timer. */
function waitForStream(
  child: ChildProcess,
  stream: 'stdout' | 'stderr',
  pattern: RegExp,
): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const match = pattern.exec(seen);
      if (match) {
        child[stream]?.off('data', onData);
        resolve(match);
      }
    };
    child[stream]?.on('data', onData);
    child.once('close', () =>
      reject(new Error(`the process ended before printing ${pattern} on ${stream}`)),
    );
  });
}

/**
 * What a test of a command that syncs needs: the sandbox, its credentials in a file
 * (LISTINGS_CREDENTIALS_FILE), and a warehouse of the test's own for the command to use.
 */
export interface SyncCommandFixture {
  sandbox: RunningSandbox;
  credentialsFile: string;
  pgliteDir: string;
  /** The test's own warehouse, once `prepare` made it (a real data directory: none kept open). */
  target: TestWarehouse | undefined;
  /**
   * Makes the warehouse, migrated or empty for the command to migrate, and returns the
   * environment that points a command at it and the sandbox. PostgreSQL: a database of
   * its own. PGlite: an in-memory warehouse that commands run in-process are handed
   * (`attachWarehouse`, by PGLITE_DATA_DIR); with `directory: true` (a child process, a
   * test of the directory itself) a real data directory instead.
   */
  prepare(options: { migrate: boolean }): Promise<Record<string, string>>;
  /** The warehouse the command uses, from this process (its close() keeps a shared one open). */
  open(): Promise<Warehouse>;
  /** Closes the warehouse (PostgreSQL: dropped) and the sandbox, and removes the directory. */
  close(): Promise<void>;
}

export interface SyncFixtureOptions {
  /** The temporary directory's prefix (default `ls-cli-`). */
  dirPrefix?: string;
  /** PGlite: a real data directory, for a child process or a test of the directory. */
  directory?: boolean;
}

export async function startSyncFixture(
  backend: TestBackend,
  sandboxOptions: SandboxOptions,
  options: SyncFixtureOptions | string = {},
): Promise<SyncCommandFixture> {
  const { dirPrefix = 'ls-cli-', directory = false } =
    typeof options === 'string' ? { dirPrefix: options } : options;
  const sandbox = await startSandbox({ ...sandboxOptions, port: 0 });
  const dir = mkdtempSync(join(tmpdir(), dirPrefix));
  const pgliteDir = join(dir, 'pglite');
  const credentialsFile = join(dir, 'credentials.json');
  writeFileSync(credentialsFile, JSON.stringify(sandbox.credentials));
  let attached: { detach(): void } | undefined;
  const fixture: SyncCommandFixture = {
    sandbox,
    credentialsFile,
    pgliteDir,
    target: undefined,
    async prepare(prepared) {
      if (backend === 'postgres') {
        fixture.target = await createTestWarehouse(backend, prepared);
      } else if (directory) {
        await createPgliteDataDir(pgliteDir, prepared);
      } else {
        fixture.target = await createTestWarehouse(backend, prepared);
        attached = attachWarehouse(pgliteDir, fixture.target);
      }
      return {
        ...(fixture.target
          ? databaseEnv(fixture.target, pgliteDir)
          : { PGLITE_DATA_DIR: pgliteDir }),
        LISTINGS_CREDENTIALS_FILE: credentialsFile,
      };
    },
    async open() {
      const target = fixture.target;
      if (target?.kind === 'pglite') return borrowed(target);
      return target
        ? openWarehouse({ databaseUrl: target.databaseUrl!, searchPath: target.searchPath! })
        : openWarehouse({ pgliteDataDir: pgliteDir });
    },
    async close() {
      attached?.detach();
      await fixture.target?.close();
      fixture.target = undefined;
      await sandbox.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return fixture;
}

/** A test's warehouse and the environment that points a command run in-process at it. */
export interface CommandWarehouse {
  /** The test's own; commands are handed it (PGlite) or connect to it (PostgreSQL). */
  warehouse: TestWarehouse;
  /** DATABASE_URL (PostgreSQL), or a PGLITE_DATA_DIR that names the attached warehouse. */
  env: Record<string, string>;
  /** Detaches and closes the warehouse (PostgreSQL: drops its database). */
  close(): Promise<void>;
}

/**
 * A warehouse for commands run in-process (`runCli`, `startCli`): on PGlite an in-memory
 * one attached to a directory name that is never created, on PostgreSQL a database of its
 * own that each command connects to as DATABASE_URL says.
 */
export async function createCommandWarehouse(
  backend: TestBackend,
  options: {
    migrate?: boolean;
    /** PGlite: the directory name to attach it to (absolute), for a test that names one. */
    dataDir?: string;
  } = {},
): Promise<CommandWarehouse> {
  const warehouse = await createTestWarehouse(backend, { migrate: options.migrate ?? true });
  if (backend === 'postgres') {
    return { warehouse, env: databaseEnv(warehouse, ''), close: () => warehouse.close() };
  }
  const dir =
    options.dataDir ?? join(tmpdir(), `ls-attached-${randomBytes(6).toString('hex')}`, 'pglite');
  const attached = attachWarehouse(dir, warehouse);
  return {
    warehouse,
    env: { PGLITE_DATA_DIR: dir },
    close: async () => {
      attached.detach();
      await warehouse.close();
    },
  };
}
