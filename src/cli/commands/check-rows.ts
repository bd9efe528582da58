/**
 * `listings-sync check`: is everything a sync needs in place? The configuration parses,
 * each credential answers one cheap authenticated read (operation 16, the country list:
 * a few hundred bytes whatever the account's size), and the warehouse is reachable and
 * migrated. Prints a table, touches no data (an embedded database that does not exist is
 * reported, not created), and exits 1 on any failure. The command itself is
 * src/cli/commands/check.ts.
 */
import { createApiClient, listCountries } from '../../api/index.ts';
import { type Config, ConfigError } from '../../config/index.ts';
import { redactText, redactUrl, silentLogger } from '../../log.ts';
import { renderTable } from '../../text-table.ts';
import { pendingMigrations } from '../../warehouse/driver/migrate.ts';
import { resolveWarehouse } from '../../warehouse/driver/open.ts';
import type { CliIo } from '../command/io.ts';
import { openCommandWarehouse } from '../command/warehouse.ts';

export interface CheckRow {
  check: string;
  ok: boolean;
  detail: string;
  /** Lines printed under the table (each problem of a bad configuration): one cell stays short. */
  notes?: string[];
}

/** A check must answer quickly: 10 s per credential, and no retries beyond two attempts. */
const CHECK_TIMEOUT_MS = 10_000;

/** The checks, in order; `load` loads the configuration (its error is the first failed row). */
export async function runChecks(
  load: () => Config,
  io: Pick<CliIo, 'services'> & Partial<Pick<CliIo, 'stderr'>> = {},
): Promise<CheckRow[]> {
  let config: Config;
  try {
    config = load();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const [first = '', ...rest] = error.message.split('\n').map((line) => line.trim());
    const notes = rest.filter((line) => line !== '');
    return [
      { check: 'configuration', ok: false, detail: first, ...(notes.length ? { notes } : {}) },
    ];
  }
  const rows: CheckRow[] = [
    {
      check: 'configuration',
      // A misspelt setting fails the check even where no command would fall back on it.
      ok: config.misspellings.length === 0,
      detail: config.warnings.length ? config.warnings.join(' ') : 'valid',
    },
  ];
  if (config.credentials.length === 0) {
    rows.push({
      check: 'credentials',
      ok: false,
      detail:
        'none configured: set LISTINGS_CREDENTIALS_FILE, or LISTINGS_BASE_URL, LISTINGS_AUTH_TOKEN and LISTINGS_USER_EMAIL',
    });
  }
  const api = createApiClient({
    concurrency: 4,
    accountConcurrency: 1,
    timeouts: {
      connectMs: CHECK_TIMEOUT_MS,
      headersMs: CHECK_TIMEOUT_MS,
      bodyMs: CHECK_TIMEOUT_MS,
    },
    retry: { maxAttempts: 2 },
    logger: silentLogger(),
  });
  try {
    const answers = await Promise.all(
      config.credentials.map(async (credential): Promise<CheckRow> => {
        const check = `credential ${credential.name}`;
        try {
          const countries = await listCountries(api, credential);
          return {
            check,
            ok: true,
            detail: `${redactUrl(credential.baseUrl)} answers (${countries.records.length} countries)`,
          };
        } catch (error) {
          return { check, ok: false, detail: redactText((error as Error).message) };
        }
      }),
    );
    rows.push(...answers);
  } finally {
    await api.close();
  }
  const target = resolveWarehouse(config, 'inspect');
  try {
    const warehouse = await openCommandWarehouse(
      { ...io, stderr: io.stderr ?? (() => {}) },
      config,
      'inspect',
    );
    try {
      rows.push({ check: 'warehouse', ok: true, detail: `${target.description} answers` });
      const pending = await pendingMigrations(warehouse.db);
      rows.push(
        pending.length
          ? {
              check: 'schema',
              ok: false,
              detail: `${pending.length} migration(s) pending (${pending.join(', ')}): run \`listings-sync migrate\``,
            }
          : { check: 'schema', ok: true, detail: 'up to date' },
      );
    } finally {
      await warehouse.close();
    }
  } catch (error) {
    rows.push({ check: 'warehouse', ok: false, detail: redactText((error as Error).message) });
  }
  return rows;
}

export function renderChecks(rows: readonly CheckRow[]): string {
  const table = renderTable(
    ['check', 'result', 'detail'],
    rows.map((row) => [row.check, row.ok ? 'ok' : 'FAILED', row.detail]),
  );
  const notes = rows.flatMap((row) => row.notes ?? []);
  return notes.length ? `${table}\n\n${notes.join('\n')}\n` : `${table}\n`;
}
