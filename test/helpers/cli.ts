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

export function startCli(args: string[], env: Record<string, string>): Started {
  const child = spawn(process.execPath, [CLI, ...args], {
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

export function runCli(args: string[], env: Record<string, string>): Promise<Finished> {
  return startCli(args, env).done;
}

/** Resolves once the child's standard error contains `text`. */
export function waitForStderr(child: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes(text)) {
        child.stderr?.off('data', onData);
        resolve();
      }
    };
    child.stderr?.on('data', onData);
    child.once('close', () => reject(new Error(`the process ended before printing ${text}`)));
  });
}
