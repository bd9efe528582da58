/**
 * The process entry's side of the command line, the one place that touches `process`:
 * the real I/O context (standard streams, the environment, the wall clock) and the
 * signal handling. The first SIGTERM or SIGINT aborts `io.signal`, so a long-running
 * command stops cleanly (a sync lets the businesses in flight commit); a second one exits
 * at once with 1, and businesses in flight roll back.
 */
import type { CliIo } from '../command/io.ts';

async function readAllStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

export function processIo(signal: AbortSignal): CliIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    isTTY: { stdout: process.stdout.isTTY === true, stderr: process.stderr.isTTY === true },
    ...(process.stderr.isTTY ? { terminal: process.stderr } : {}),
    env: process.env,
    now: () => new Date(),
    signal,
    readStdin: readAllStdin,
  };
}

/** Runs `main` as the process: signals wired to the io's signal, the exit code set. */
export async function runProcess(
  main: (argv: readonly string[], io: CliIo) => Promise<number>,
): Promise<void> {
  const stop = new AbortController();
  const onSignal = (name: NodeJS.Signals) => {
    if (stop.signal.aborted) {
      process.stderr.write(
        `listings-sync: second ${name}: exiting now; businesses in flight roll back\n`,
      );
      process.exit(1);
    }
    stop.abort(name);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const code = await main(process.argv, processIo(stop.signal));
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  process.exitCode = code;
}
