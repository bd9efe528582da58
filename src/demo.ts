/**
 * `npm start`: the product on one machine with nothing configured. A sandbox copy of the
 * upstream runs in-process on an ephemeral port, the embedded warehouse is migrated, one
 * sync runs, and the summary says what landed and what to run next.
 *
 * The 30-day simulation, the BI views and the HTML report come with the demo issue; this
 * is the first slice of it.
 */
import { createConfiguredApiClient } from './api/client.ts';
import type { Config } from './config.ts';
import type { Logger } from './log.ts';
import { startSandbox } from './sandbox/server.ts';
import { createProgressReporter } from './sync/progress.ts';
import { runSync } from './sync/run.ts';
import { renderSyncSummary } from './sync/summary.ts';
import { openWarehouse } from './warehouse/connection.ts';
import { migrateToLatest } from './warehouse/migrate.ts';

const DEMO_SEED = 7;
/**
 * The demo's own embedded warehouse: sandbox data must never land in the warehouse a
 * real account syncs into (`DATABASE_URL`, or the default `./.data/pglite`).
 */
export const DEMO_DATA_DIR = './.data/demo';

export async function runDemoCommand(config: Config, logger: Logger): Promise<number> {
  const out = (line = '') => process.stdout.write(`${line}\n`);
  const sandbox = await startSandbox({
    seed: DEMO_SEED,
    accounts: 2,
    businessesPerAccount: 25,
    port: 0,
  });
  const warehouse = await openWarehouse({ pgliteDataDir: DEMO_DATA_DIR });
  const api = createConfiguredApiClient(config, logger);
  try {
    out(`Sandbox of the upstream API (seed ${DEMO_SEED}) at ${sandbox.baseUrl}`);
    const { applied } = await migrateToLatest(warehouse.db);
    out(`Warehouse: embedded PGlite in ${DEMO_DATA_DIR} (${applied.length} migration(s) applied)`);
    const progress = createProgressReporter({ stream: process.stderr, logger, label: 'demo sync' });
    const result = await runSync({
      warehouse,
      api,
      credentials: sandbox.credentials,
      logger,
      trigger: 'demo',
      onProgress: (p) => progress.update(p),
    });
    progress.stop();
    out();
    out(renderSyncSummary(result));
    out('Next:');
    out(
      '  npx listings-sync sandbox --seed 7 --credentials-out credentials.json   # a sandbox to point at',
    );
    out('  LISTINGS_CREDENTIALS_FILE=credentials.json npx listings-sync sync        # sync it');
    out(
      '  LISTINGS_BASE_URL=… LISTINGS_AUTH_TOKEN=… LISTINGS_USER_EMAIL=… npx listings-sync sync   # a real account',
    );
    return result.status === 'succeeded' ? 0 : 3;
  } finally {
    await api.close();
    await warehouse.close();
    await sandbox.close();
  }
}
