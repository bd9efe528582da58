/**
 * How a long sync shows it is alive: on a terminal a progress bar (businesses done of
 * total, requests per second, ETA); off a terminal a structured log line every interval,
 * so a CronJob's log tells how far the run got.
 */
import cliProgress from 'cli-progress';
import { type Logger, routeTerminalLines } from '../log.ts';

/** A run's counts so far, as the progress line and the `still working` line show them. */
export interface SyncProgress {
  accountsTotal: number;
  accountsDone: number;
  businessesTotal: number;
  businessesDone: number;
  requests: number;
  elapsedSeconds: number;
}

export interface ProgressReporter {
  update(progress: SyncProgress): void;
  stop(): void;
}

/** Seconds between progress lines off a terminal: often enough to see a stall, rarely enough to read. */
const LOG_INTERVAL_MS = 10_000;

function rate(progress: SyncProgress): number {
  return progress.elapsedSeconds > 0 ? progress.requests / progress.elapsedSeconds : 0;
}

function eta(progress: SyncProgress): number | null {
  const { businessesDone, businessesTotal, elapsedSeconds } = progress;
  if (businessesDone === 0 || businessesTotal === 0) return null;
  return Math.max(0, (elapsedSeconds / businessesDone) * (businessesTotal - businessesDone));
}

export function createProgressReporter(options: {
  /** The terminal to draw a bar on (the command's `io.terminal`); none: log lines. */
  terminal: NodeJS.WriteStream | undefined;
  logger: Logger;
  label?: string;
}): ProgressReporter {
  if (options.terminal?.isTTY) return barReporter(options.terminal, options.label ?? 'sync');
  return logReporter(options.logger);
}

function barReporter(stream: NodeJS.WriteStream, label: string): ProgressReporter {
  const bar = startTerminalBar(
    stream,
    `${label} [{bar}] {value}/{total} businesses | {rps} req/s | accounts {accounts} | ETA {etaText}`,
  );
  return {
    update(progress) {
      bar.update(progress.businessesDone, progress.businessesTotal, {
        rps: rate(progress).toFixed(0),
        accounts: `${progress.accountsDone}/${progress.accountsTotal}`,
        etaText: formatSeconds(eta(progress)),
      });
    },
    stop: () => bar.stop(),
  };
}

export interface TerminalBar {
  update(value: number, total: number, payload: Record<string, unknown>): void;
  stop(): void;
}

/**
 * A progress bar on a terminal that log lines go above, never through: while it is drawn,
 * the human log lines (src/log.ts) are handed to the bar, which prints them on their own
 * lines and redraws itself below. Stopping flushes what is pending, then leaves the final
 * bar and a newline, so what is printed next starts on a clean line.
 */
export function startTerminalBar(stream: NodeJS.WriteStream, format: string): TerminalBar {
  const multi = new cliProgress.MultiBar(
    {
      stream,
      format,
      hideCursor: true,
      clearOnComplete: false,
      gracefulExit: false,
      barsize: 30,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  let bar: cliProgress.SingleBar | undefined;
  let stopped = false;
  routeTerminalLines((text) => {
    if (bar) multi.log(text);
    else stream.write(text);
  });
  return {
    update(value, total, payload) {
      if (stopped) return;
      if (!bar) bar = multi.create(total, value, payload);
      bar.setTotal(total);
      bar.update(value, payload);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      routeTerminalLines(undefined);
      if (bar) {
        multi.update(); // flush log lines still buffered
        multi.stop();
      }
    },
  };
}

function logReporter(logger: Logger): ProgressReporter {
  let last = 0;
  let latest: SyncProgress | undefined;
  const emit = (progress: SyncProgress) => {
    logger.info(
      {
        businessesDone: progress.businessesDone,
        businessesTotal: progress.businessesTotal,
        accountsDone: progress.accountsDone,
        accountsTotal: progress.accountsTotal,
        requests: progress.requests,
        requestsPerSecond: Math.round(rate(progress)),
        etaSeconds: eta(progress) === null ? null : Math.round(eta(progress) ?? 0),
      },
      'sync progress',
    );
  };
  return {
    update(progress) {
      latest = progress;
      const now = Date.now();
      if (now - last >= LOG_INTERVAL_MS) {
        last = now;
        emit(progress);
      }
    },
    stop() {
      if (latest && latest.businessesDone !== latest.businessesTotal) emit(latest);
    },
  };
}

export function formatSeconds(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return '--';
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}
