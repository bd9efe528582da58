/**
 * Running `listings-sync` as a user does: a child process on this Node, with only the
 * environment a test gives it, its output collected.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const CLI = join(import.meta.dirname, '../../src/cli.ts');

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface Started {
  child: ChildProcess;
  done: Promise<Finished>;
  /** Standard output so far. */
  stdout(): string;
}

export interface CliOptions {
  /** The working directory (default: this process's), for commands that read `./.data`. */
  cwd?: string;
}

export function startCli(
  args: string[],
  env: Record<string, string>,
  options: CliOptions = {},
): Started {
  const child = spawn(process.execPath, [CLI, ...args], {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: { PATH: process.env['PATH'] ?? '', LOG_LEVEL: 'info', ...env },
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

export function runCli(
  args: string[],
  env: Record<string, string>,
  options: CliOptions = {},
): Promise<Finished> {
  return startCli(args, env, options).done;
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
