/**
 * The process entry's side of the command line, the one place that touches `process`
 * but for its environment (read in src/config/load.ts, where the configuration is
 * parsed): the real I/O context (standard streams, that environment, the wall clock) and
 * the signal handling. The first SIGTERM or SIGINT aborts `io.signal`, so a long-running
 * command stops cleanly (a sync lets the businesses in flight commit, within a bounded
 * grace); a second one aborts `io.stopNow`: the run ends now, businesses in flight roll
 * back, and it is still recorded `interrupted`. Should even that hang, the process exits
 * with 3 after SECOND_SIGNAL_EXIT_MS.
 *
 * Under npm (`npx listings-sync …`, `npm start`) one Ctrl-C can arrive twice: the terminal
 * sends it to npm and the command alike, and npm passes what it receives on to the
 * command (when its shell execs the command, as bash does). A repeat within
 * NPM_REPEAT_MS is that copy, not a second stop (docs/running.md, "Signals").
 *
 * A closed pipe (`listings-sync runs | head -1`) ends any command quietly: EPIPE on
 * standard output or error is not an error to print with a stack, it stops the command as
 * the first SIGTERM would (a long-running one winds down cleanly), and later writes to
 * that stream are dropped (docs/running.md, "Signals").
 */

import { processEnvironment } from '../config/environment.ts';
import { EXIT } from './command/exit-codes.ts';
import type { CliIo } from './command/io.ts';

async function readAllStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/** After a second signal, how long recording the run `interrupted` may take before the process exits regardless. */
const SECOND_SIGNAL_EXIT_MS = 10_000;

/**
 * npm passes a signal on as soon as it sees it: milliseconds later, tens on a loaded
 * machine. A person's second Ctrl-C follows their reading of the first one's "stopping"
 * line, seconds later. One second lies between the two.
 */
const NPM_REPEAT_MS = 1_000;

/** Which standard streams have met a closed pipe: writes to them are dropped. */
const closedPipes = { stdout: false, stderr: false };

/**
 * EPIPE on standard output or error: the reader went away (`| head -1`). The stream is
 * marked closed and `onClosed` told (the command stops); any other error is rethrown.
 */
export function endQuietlyOnClosedPipe(
  stream: NodeJS.WriteStream,
  name: 'stdout' | 'stderr',
  onClosed: () => void,
): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    if (closedPipes[name]) return;
    closedPipes[name] = true;
    onClosed();
  });
}

export function processIo(signal: AbortSignal, stopNow?: AbortSignal): CliIo {
  return {
    stdout: (text) => {
      if (!closedPipes.stdout) process.stdout.write(text);
    },
    stderr: (text) => {
      if (!closedPipes.stderr) process.stderr.write(text);
    },
    isTTY: { stdout: process.stdout.isTTY === true, stderr: process.stderr.isTTY === true },
    ...(process.stderr.isTTY ? { terminal: process.stderr } : {}),
    env: processEnvironment(),
    now: () => new Date(),
    signal,
    ...(stopNow ? { stopNow } : {}),
    readStdin: readAllStdin,
  };
}

/** npm sets `npm_lifecycle_event` for what it runs: `npx` for `npx`/`npm exec`, else the script's name. */
function startedByNpm(env: Record<string, string | undefined>): boolean {
  return Boolean(env['npm_lifecycle_event']);
}

/**
 * What each SIGTERM or SIGINT means: the first stops; a later one stops now, unless the
 * process runs under npm and it comes within NPM_REPEAT_MS of the first (npm's copy).
 * `now` is in milliseconds (`performance.now()` in the process).
 */
export function signalMeaning(options: {
  underNpm: boolean;
  now: () => number;
}): () => 'stop' | 'repeat' | 'stop-now' {
  let stoppedAt: number | undefined;
  return () => {
    const at = options.now();
    if (stoppedAt === undefined) {
      stoppedAt = at;
      return 'stop';
    }
    return options.underNpm && at - stoppedAt < NPM_REPEAT_MS ? 'repeat' : 'stop-now';
  };
}

/** Runs `main` as the process: signals wired to the io's signal, the exit code set. */
export async function runProcess(
  main: (argv: readonly string[], io: CliIo) => Promise<number>,
): Promise<void> {
  const stop = new AbortController();
  const stopNow = new AbortController();
  const meaning = signalMeaning({
    underNpm: startedByNpm(processEnvironment()),
    now: () => performance.now(),
  });
  const onSignal = (name: NodeJS.Signals) => {
    const means = meaning();
    if (means === 'repeat') return;
    if (means === 'stop-now') {
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
  endQuietlyOnClosedPipe(process.stdout, 'stdout', () => stop.abort('EPIPE'));
  endQuietlyOnClosedPipe(process.stderr, 'stderr', () => stop.abort('EPIPE'));
  const code = await main(process.argv, processIo(stop.signal, stopNow.signal));
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  process.exitCode = code;
}
