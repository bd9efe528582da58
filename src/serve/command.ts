/**
 * `listings-sync serve`: open the warehouse and an API client, start the server, and on
 * SIGTERM/SIGINT close it (no new webhooks, the running sync finishes its businesses in
 * flight), close the pools, flush the log and exit 0. A second signal exits at once.
 */
import { createConfiguredApiClient } from '../api/client.ts';
import { type Config, requireWebhookSecrets } from '../config/index.ts';
import type { Logger } from '../log.ts';
import { openConfiguredWarehouse } from '../warehouse/open.ts';
import { startServe } from './server.ts';

export async function runServeCommand(config: Config, logger: Logger): Promise<number> {
  // Configuration errors first, before anything is opened.
  requireWebhookSecrets(config);
  const warehouse = await openConfiguredWarehouse(config);
  const api = createConfiguredApiClient(config, logger);
  let serve: Awaited<ReturnType<typeof startServe>>;
  try {
    serve = await startServe({ config, warehouse, api, logger });
  } catch (error) {
    await api.close();
    await warehouse.close();
    throw error;
  }
  process.stdout.write(
    `listings-sync serve on ${serve.url}: POST /webhooks, GET /healthz, /readyz, /metrics\n`,
  );

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    const onSignal = (name: NodeJS.Signals) => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      process.once('SIGTERM', onSecond);
      process.once('SIGINT', onSecond);
      resolve(name);
    };
    const onSecond = (name: NodeJS.Signals) => {
      logger.warn({ signal: name }, 'second signal: exiting now; businesses in flight roll back');
      logger.flush();
      process.exit(1);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  logger.info({ signal }, 'signal received: shutting down');
  await serve.close();
  await api.close();
  await warehouse.close();
  logger.info('bye');
  logger.flush();
  return 0;
}
