/**
 * `listings-sync alerts [--pending] [--limit N]`: recent alerts as a table;
 * `alerts test`: one test message to each configured sink;
 * `alerts send-backlog [--sink NAME] [--since YYYY-MM-DD]`: sends alerts a sink skipped as
 * raised before it was configured; `alerts skip-backlog [--sink NAME]`: starts sinks from
 * now (src/cli/commands/alert-list.ts; docs/alerts.md, "A sink added later").
 */
import { type Command, Option } from 'commander';
import type { AlertDispatcher } from '../../alerts/dispatcher.ts';
import type { AlertSink } from '../../alerts/sinks.ts';
import { ConfigError } from '../../config/index.ts';
import { UsageError } from '../../usage-error.ts';
import type { Warehouse } from '../../warehouse/driver/connection.ts';
import { requireCurrentSchema } from '../../warehouse/driver/open.ts';
import { EXIT } from '../command/exit-codes.ts';
import type { CliIo } from '../command/io.ts';
import { createCommandLogger } from '../command/logger.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';
import { openCommandWarehouse } from '../command/warehouse.ts';
import { dateOption, integerOption } from '../options.ts';

const NO_SINK =
  'No alert sink is configured: set ALERT_SLACK_WEBHOOK_URL, or ALERT_WEBHOOK_URL with ' +
  'ALERT_WEBHOOK_SECRET.';

export function registerAlertsCommand(program: Command, io: CliIo): void {
  const alerts = program
    .command('alerts')
    .description('List recent alerts (every kind: what changed, the business, delivery per sink).')
    .option(
      '--pending',
      'only alerts a configured sink will still take (under ALERT_BACKLOG, a sink not run yet skips the older ones)',
    )
    .addOption(
      new Option('--limit <n>', 'how many, most recent first')
        .default(50)
        .argParser(integerOption('--limit', 1, 100_000)),
    )
    .action(async (options: { pending?: boolean; limit: number }) => {
      const config = loadCommandConfig(io, 'alerts');
      const { configuredSinkNames, NO_SINK_PENDING, renderAlerts } = await import(
        './alert-list.ts'
      );
      const { recentAlerts } = await import('../../alerts/outbox.ts');
      const { countOpenNotTakenBy, countSkippedBySink } = await import(
        '../../alerts/outbox-rows.ts'
      );
      const { sinksSeen } = await import('../../alerts/sink-rows.ts');
      // Only reads: a missing embedded database is an error, never created by looking.
      const warehouse = await openCommandWarehouse(io, config, 'read');
      try {
        await requireCurrentSchema(warehouse);
        const pending = options.pending === true;
        const sinks = configuredSinkNames(config);
        io.exitCode = EXIT.ok;
        // With no sink, alerts are only logged: none waits for a delivery.
        if (pending && sinks.length === 0) {
          io.stdout(NO_SINK_PENDING);
          return;
        }
        const seen = await sinksSeen(warehouse.db);
        // A sink no dispatcher has run with decides its backlog at its first pass
        // (docs/alerts.md, "A sink added later"): under skip, it takes none of what is open.
        const fresh = sinks.filter((sink) => !seen.some((row) => row.sink === sink));
        const takers = sinks.filter(
          (sink) => config.alertBacklog === 'send' || !fresh.includes(sink),
        );
        const rows = await recentAlerts(warehouse.db, {
          pending,
          limit: options.limit,
          ...(pending ? { pendingFor: takers } : {}),
        });
        const skipped = await countSkippedBySink(warehouse.db);
        const open = await countOpenNotTakenBy(warehouse.db, fresh);
        io.stdout(
          renderAlerts(rows, {
            pending,
            sinks,
            seen,
            skipped,
            ...(fresh.length > 0 ? { fresh: { backlog: config.alertBacklog, open } } : {}),
          }),
        );
      } finally {
        await warehouse.close();
      }
    });

  registerTestCommand(alerts, io);
  registerSendBacklogCommand(alerts, io);
  registerSkipBacklogCommand(alerts, io);
}

/** `alerts test`: one test message to each configured sink, each answer printed. */
function registerTestCommand(alerts: Command, io: CliIo): void {
  alerts
    .command('test')
    .description(
      'Post one test message to each configured sink (signed like real alerts); print each answer. ' +
        'Exit 1 if any sink fails. Writes nothing to the warehouse.',
    )
    .action(async () => {
      const config = loadCommandConfig(io, 'alerts');
      const { alertSinksFromConfig } = await import('../../alerts/configured-sinks.ts');
      const { configuredSinkUrls, renderTestResults, sendTestAlerts } = await import(
        './alert-list.ts'
      );
      const sinks = alertSinksFromConfig(config);
      if (sinks.length === 0) throw new ConfigError(NO_SINK);
      const results = await sendTestAlerts(sinks, configuredSinkUrls(config), io.now());
      io.stdout(renderTestResults(results));
      io.exitCode = results.every((r) => r.ok) ? EXIT.ok : EXIT.fatal;
    });
}

/** `alerts send-backlog`: the alerts a sink skipped (ALERT_BACKLOG=skip) due again, and sent. */
function registerSendBacklogCommand(alerts: Command, io: CliIo): void {
  alerts
    .command('send-backlog')
    .description(
      'Send the alerts a sink skipped because they were raised before it was configured ' +
        '(ALERT_BACKLOG=skip). Exit 3 if a sink refuses some (serve retries them).',
    )
    .option('--sink <name>', 'only this configured sink (slack or webhook)')
    .addOption(
      new Option('--since <date>', 'only alerts detected on or after this UTC day').argParser(
        dateOption('--since'),
      ),
    )
    .action(async (options: { sink?: string; since?: string }) => {
      const { reopenSkipped } = await import('../../alerts/outbox-rows.ts');
      await withBacklogSinks(io, options.sink, async ({ warehouse, sinks, dispatcher }) => {
        const reopened = await reopenSkipped(warehouse.db, {
          sinks: sinks.map((sink) => sink.name),
          ...(options.since ? { since: new Date(`${options.since}T00:00:00Z`) } : {}),
        });
        const names = sinks.map((sink) => sink.name).join(', ');
        if (reopened === 0) {
          io.stdout(
            `No skipped alerts for ${names}${options.since ? ` since ${options.since}` : ''}.\n`,
          );
          io.exitCode = EXIT.ok;
          return;
        }
        const result = await dispatcher.dispatch();
        io.stdout(
          `${reopened} skipped ${reopened === 1 ? 'alert is' : 'alerts are'} due again for ${names}; ` +
            `delivered now: ${result.delivered}` +
            (result.failed + result.released > 0
              ? `, not yet: ${result.failed + result.released} (serve retries them)`
              : '') +
            '.\n',
        );
        io.exitCode = result.failed + result.released > 0 ? EXIT.partial : EXIT.ok;
      });
    });
}

/** `alerts skip-backlog`: sinks start from now, every alert still pending for them skipped. */
function registerSkipBacklogCommand(alerts: Command, io: CliIo): void {
  alerts
    .command('skip-backlog')
    .description(
      'Start sinks from now: mark every alert still pending for them as skipped (a sink ' +
        'added back after a while, or a backlog no one needs). `send-backlog` undoes it.',
    )
    .option('--sink <name>', 'only this configured sink (slack or webhook)')
    .action(async (options: { sink?: string }) => {
      const { skipPending } = await import('../../alerts/outbox.ts');
      await withBacklogSinks(io, options.sink, async ({ warehouse, configured, sinks }) => {
        const marked = await skipPending(warehouse.db, {
          sinks: sinks.map((sink) => sink.name),
          configured: configured.map((sink) => sink.name),
          at: io.now(),
        });
        for (const [sink, n] of Object.entries(marked)) {
          io.stdout(
            `${sink}: ${n} pending ${n === 1 ? 'alert' : 'alerts'} skipped; it starts from now.\n`,
          );
        }
        io.exitCode = EXIT.ok;
      });
    });
}

/**
 * What `send-backlog` and `skip-backlog` run in: the configured sinks and those `--sink`
 * names, the warehouse, and a dispatcher that has recorded the sinks first (a sink never
 * seen would otherwise decide its backlog, at its first pass, over what the command did).
 */
async function withBacklogSinks(
  io: CliIo,
  sinkName: string | undefined,
  work: (context: {
    warehouse: Warehouse;
    configured: readonly AlertSink[];
    sinks: readonly AlertSink[];
    dispatcher: AlertDispatcher;
  }) => Promise<void>,
): Promise<void> {
  const config = loadCommandConfig(io, 'alerts');
  const logger = createCommandLogger(io, config);
  const { alertSinksFromConfig } = await import('../../alerts/configured-sinks.ts');
  const { createAlertDispatcher } = await import('../../alerts/dispatcher.ts');
  const configured = alertSinksFromConfig(config);
  const sinks = chosenSinks(configured, sinkName);
  const warehouse = await openCommandWarehouse(io, config);
  try {
    await requireCurrentSchema(warehouse);
    const dispatcher = createAlertDispatcher({
      db: warehouse.db,
      sinks: configured,
      logger,
      sinkTimeoutMs: config.alertSinkTimeoutMs,
      now: () => io.now(),
    });
    await dispatcher.recordSinks();
    await work({ warehouse, configured, sinks, dispatcher });
  } finally {
    await warehouse.close();
  }
}

/** The configured sinks `--sink` names, or all of them; a usage error for any other name. */
function chosenSinks(configured: readonly AlertSink[], name: string | undefined): AlertSink[] {
  if (configured.length === 0) throw new ConfigError(NO_SINK);
  if (!name) return [...configured];
  const chosen = configured.filter((sink) => sink.name === name);
  if (chosen.length === 0) {
    throw new UsageError(
      `--sink ${name} is not a configured sink; configured: ${configured.map((s) => s.name).join(', ')}.`,
    );
  }
  return chosen;
}
