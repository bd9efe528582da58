/**
 * A run's events on their way (docs/lineage.md, "Lineage never holds a run"): loaded only
 * when lineage is on (src/lineage/run.ts imports it dynamically). START goes when the run
 * starts and is not waited for; the last event waits for START (so that it comes after it)
 * and goes with the views' JobEvents, each send bounded by OPENLINEAGE__TRANSPORT__TIMEOUT.
 * A failed send is said once per run, at warn, naming the receiver without credentials
 * and the reason; the run's outcome never depends on it.
 */
import { sql } from 'kysely';
import type { Logger } from '../log.ts';
import type { Warehouse } from '../warehouse/driver/connection.ts';
import type { WarehouseLocation } from './datasets.ts';
import {
  type EventContext,
  type LineageRunEnd,
  type LineageRunInfo,
  runEvent,
  viewEvents,
} from './events.ts';
import type { LineageSettings } from './settings.ts';
import { createSend, EmitError, printableTarget, type Send } from './transport.ts';

export interface EmitterOptions {
  settings: LineageSettings;
  info: LineageRunInfo;
  warehouse?: Warehouse;
  logger: Logger;
  /** The events' clock; the system's by default. */
  now?: () => Date;
}

export interface RunEmitter {
  /** Sends the run's last event and the views' events; resolves when they went or failed. */
  end(end: LineageRunEnd): Promise<void>;
}

/** CPU spent building and sending events in this process, in microseconds (bench/lineage.ts). */
export const lineageCpu = { micros: 0 };

function timed<T>(work: () => T): T {
  const before = process.cpuUsage();
  try {
    return work();
  } finally {
    const spent = process.cpuUsage(before);
    lineageCpu.micros += spent.user + spent.system;
  }
}

/**
 * Where the warehouse's tables are: the configured namespace, the database and schema the
 * run's connections use (one query per run, beside its work; `postgres.public` if it fails).
 */
async function locate(settings: LineageSettings, warehouse: Warehouse): Promise<WarehouseLocation> {
  try {
    const { rows } = await sql<{ database: string; schema: string | null }>`
      select current_database() as database, current_schema() as schema`.execute(warehouse.db);
    const row = rows[0];
    return {
      namespace: settings.warehouseNamespace,
      database: row?.database ?? 'postgres',
      schema: row?.schema ?? 'public',
    };
  } catch {
    return { namespace: settings.warehouseNamespace, database: 'postgres', schema: 'public' };
  }
}

export function startEmitter(options: EmitterOptions): RunEmitter {
  const { settings, info, logger } = options;
  const now = options.now ?? (() => new Date());
  const send: Send = createSend(settings.transport, settings.timeoutMs);
  const producer = `https://github.com/listings-sync/listings-sync/tree/v${settings.version}`;
  let warned = false;
  const warnOnce = (error: unknown) => {
    if (warned) return;
    warned = true;
    logger.warn(
      {
        receiver: printableTarget(settings.transport),
        error: error instanceof EmitError ? error.reason : 'unknown',
      },
      'lineage event not sent; the run goes on',
    );
  };
  const context: Promise<EventContext> = (async () => ({
    producer,
    namespace: settings.namespace,
    ...(settings.parent ? { parent: settings.parent } : {}),
    ...(options.warehouse ? { warehouse: await locate(settings, options.warehouse) } : {}),
  }))();
  const started = context.then((ctx) => {
    const event = timed(() => runEvent(ctx, info, now()));
    return timed(() => send([event]));
  });
  started.catch(warnOnce);
  return {
    async end(end) {
      await started.catch(() => {});
      const ctx = await context;
      const at = now();
      const events = timed(() => [
        runEvent(ctx, info, at, end),
        ...(end.status === 'failed' ? [] : viewEvents(ctx, at)),
      ]);
      await timed(() => send(events)).catch(warnOnce);
    },
  };
}
