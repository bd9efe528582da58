/**
 * The process entry's side of the command line, the one place that touches `process`
 * but for its environment (read in src/config/load.ts, where the configuration is
 * parsed): the real I/O context (standard streams, that environment, the wall clock) and
 * the signal handling. The first SIGTERM or SIGINT aborts `io.signal`, so a long-running
 * command stops cleanly (a sync lets the businesses in flight commit, within a bounded
 * grace); a second one aborts `io.stopNow`: the run ends now, businesses in flight roll
 * back, and it is still recorded `interrupted`. Should even that hang, the process exits
 * with 3 after SECOND_SIGNAL_EXIT_MS.
 */
import { EXIT } from '../command/exit-codes.ts';
import type { CliIo } from '../command/io.ts';
import { processEnvironment } from '../config/load.ts';

async function readAllStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/** After a second signal, how long recording the run `interrupted` may take before the process exits regardless. */
const SECOND_SIGNAL_EXIT_MS = 10_000;

export function processIo(signal: AbortSignal, stopNow?: AbortSignal): CliIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    isTTY: { stdout: process.stdout.isTTY === true, stderr: process.stderr.isTTY === true },
    ...(process.stderr.isTTY ? { terminal: process.stderr } : {}),
    env: processEnvironment(),
    now: () => new Date(),
    signal,
    ...(stopNow ? { stopNow } : {}),
    readStdin: readAllStdin,
  };
}

/** Runs `main` as the process: signals wired to the io's signal, the exit code set. */
export async function runProcess(
  main: (argv: readonly string[], io: CliIo) => Promise<number>,
): Promise<void> {
  const stop = new AbortController();
  const stopNow = new AbortController();
  const onSignal = (name: NodeJS.Signals) => {
    if (stop.signal.aborted) {
      process.stderr.write(
        `listings-sync: second ${name}: ending now; businesses in flight roll back\n`,
      );
      stopNow.abort(name);
      setTimeout(() => process.exit(EXIT.partial), SECOND_SIGNAL_EXIT_MS).unref();
      return;
    }
    stop.abort(name);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const code = await main(process.argv, processIo(stop.signal, stopNow.signal));
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  process.exitCode = code;
}
