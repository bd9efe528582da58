/**
 * `listings-sync serve`: open the warehouse and an API client, start the server, and when
 * `io.signal` is aborted (the process entry does so on SIGTERM/SIGINT) close it: no new
 * webhooks, the running sync finishes its businesses in flight, the pools close, the log
 * is flushed, exit 0. A second signal is the process entry's: it exits at once.
 */
import type { Command } from 'commander';
import { createConfiguredApiClient } from '../../api/client.ts';
import { requireWebhookSecrets } from '../../config/index.ts';
import { EXIT } from '../command/exit-codes.ts';
import { type CliIo, untilAborted } from '../command/io.ts';
import { createCommandLogger } from '../command/logger.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';
import { openCommandWarehouse } from '../command/warehouse.ts';
import { signalName } from './sync.ts';

export function registerServeCommand(program: Command, io: CliIo): void {
  program
    .command('serve')
    .description(
      'Run the sync on SYNC_SCHEDULE, take signed webhooks on PORT, send alerts; metrics on METRICS_PORT.',
    )
    .action(async () => {
      io.exitCode = await runServeCommand(io);
    });
}

async function runServeCommand(io: CliIo): Promise<number> {
  const config = loadCommandConfig(io, 'serve');
  const logger = createCommandLogger(io, config);
  // Configuration errors first, before anything is opened.
  requireWebhookSecrets(config);
  const { startServe } = await import('../../serve/server.ts');
  const warehouse = await openCommandWarehouse(io, config, 'write', { command: 'serve' });
  if (warehouse.kind === 'pglite') {
    // PGlite serves one process at a time: say so once, at the start (docs/serve.md).
    logger.warn(
      { pgliteDataDir: warehouse.target.pgliteDataDir },
      `serve holds the embedded PGlite database in ${warehouse.target.pgliteDataDir} while it runs: ` +
        '`runs`, `alerts`, `report` and `sync` cannot open it until serve stops. To run them beside ' +
        'serve, set DATABASE_URL to PostgreSQL (`listings-sync warehouse copy` moves the data; ' +
        'docs/backup-restore.md, "Moving from PGlite to PostgreSQL").',
    );
  }
  const api = createConfiguredApiClient(config, logger);
  let serve: Awaited<ReturnType<typeof startServe>>;
  try {
    serve = await startServe({ config, warehouse, api, logger });
  } catch (error) {
    await api.close();
    await warehouse.close();
    throw error;
  }
  // The addresses the sockets are bound to (LISTEN_ADDRESS, METRICS_LISTEN_ADDRESS), then
  // a URL to reach each from this machine (docs/serve.md, "What it serves").
  io.stdout(
    `listings-sync serve on ${serve.url}: POST /webhooks, GET /healthz, /readyz (bound to ${serve.address}); ` +
      `metrics on ${serve.metricsUrl}/metrics (bound to ${serve.metricsAddress})\n`,
  );
  await untilAborted(io.signal);
  logger.info({ signal: signalName(io.signal) }, 'signal received: shutting down');
  await serve.close();
  await api.close();
  await warehouse.close();
  logger.info('bye');
  logger.flush();
  return EXIT.ok;
}
