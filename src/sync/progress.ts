/**
 * How a long sync shows it is alive: on a terminal a progress bar (businesses done of
 * total, requests per second, ETA); off a terminal a structured log line every interval,
 * so a CronJob's log tells how far the run got.
 */
import cliProgress from 'cli-progress';
import type { Logger } from '../log.ts';
import type { SyncProgress } from './run.ts';

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
  stream: NodeJS.WriteStream;
  logger: Logger;
  label?: string;
}): ProgressReporter {
  if (options.stream.isTTY) return barReporter(options.stream, options.label ?? 'sync');
  return logReporter(options.logger);
}

function barReporter(stream: NodeJS.WriteStream, label: string): ProgressReporter {
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: `${label} [{bar}] {value}/{total} businesses | {rps} req/s | accounts {accounts} | ETA {etaText}`,
      hideCursor: true,
      clearOnComplete: false,
      barsize: 30,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update(progress) {
      const payload = {
        rps: rate(progress).toFixed(0),
        accounts: `${progress.accountsDone}/${progress.accountsTotal}`,
        etaText: formatSeconds(eta(progress)),
      };
      if (!started) {
        bar.start(progress.businessesTotal, progress.businessesDone, payload);
        started = true;
      }
      bar.setTotal(progress.businessesTotal);
      bar.update(progress.businessesDone, payload);
    },
    stop() {
      if (started) bar.stop();
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
