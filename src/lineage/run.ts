/**
 * The two calls a run makes (docs/lineage.md): `startLineageRun` when its `sync_runs` row
 * is made, and `end` on what it returns when it is recorded. Off (nothing configured, the
 * default), `startLineageRun` returns undefined and nothing else of lineage is loaded; on,
 * it loads the emitter (src/lineage/emit.ts) and START goes without the run waiting for it.
 * The process entry turns it on for a command (`withLineage`, from the environment,
 * src/cli/program.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { type Logger, redactText } from '../log.ts';
import type { Warehouse } from '../warehouse/driver/connection.ts';
import { calledOperations, rowsWritten } from './counts.ts';
import type { LineageRunEnd, LineageRunInfo } from './events.ts';
import type { LineageSettings } from './settings.ts';

/**
 * The settings of the command in force: each command runs in its own context, so that
 * commands run side by side in one process (tests) each keep their own.
 */
const inForce = new AsyncLocalStorage<LineageSettings | undefined>();

/** Runs `work` with lineage on with `settings` (undefined: off) for the runs it starts. */
export function withLineage<T>(settings: LineageSettings | undefined, work: () => T): T {
  return inForce.run(settings, work);
}

export function lineageSettingsInForce(): LineageSettings | undefined {
  return inForce.getStore();
}

export interface LineageRun {
  /**
   * Sends the last event; never rejects, resolves within the emit's bounds. Only the
   * first call sends: a later one (the run's `finally`) does nothing.
   */
  end(end: LineageRunEnd): Promise<void>;
}

/** The client's counters of a run that called nothing (or whose calls are not known). */
export const NO_CALLS = { before: { byOperation: {} }, after: { byOperation: {} } } as const;

export function startLineageRun(
  info: LineageRunInfo,
  options: { warehouse?: Warehouse; logger: Logger },
): LineageRun | undefined {
  const settings = inForce.getStore();
  if (!settings) return undefined;
  const emitter = import('./emit.ts').then(({ startEmitter }) =>
    startEmitter({ settings, info, ...options }),
  );
  emitter.catch(() => {});
  let ended = false;
  return {
    async end(end) {
      if (ended) return;
      ended = true;
      try {
        await (await emitter).end(end);
      } catch {
        // Lineage never changes a run's outcome.
      }
    },
  };
}

type Calls = Readonly<Record<string, Readonly<Record<string, number>>>>;

/**
 * A sync run's last event, from what it records: its status, its tables' counts, the
 * client's counters before and after it (the operations it called), its error text
 * (redacted again here: an event leaves the machine).
 */
export function syncRunEnd(
  status: LineageRunEnd['status'],
  tables: Parameters<typeof rowsWritten>[0],
  calls: { before: { byOperation: Calls }; after: { byOperation: Calls } },
  error: string | undefined,
): LineageRunEnd {
  return {
    status,
    rowsWritten: rowsWritten(tables),
    operations: calledOperations(calls.before.byOperation, calls.after.byOperation),
    ...(error ? { error: redactText(error) } : {}),
  };
}

/** The job's command of a sync run, by its trigger: replay's and the demo's are their own. */
export function lineageCommand(trigger: string | undefined): string {
  return trigger === 'replay' || trigger === 'demo' ? trigger : 'sync';
}
