/**
 * `listings-sync report [--out report.html] [--business ID] [--days 90]`: the HTML report
 * of the configured warehouse (`DATABASE_URL`, or the embedded PGlite).
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { sql } from 'kysely';
import { loadCliConfig } from '../cli-config.ts';
import type { Database } from '../warehouse/database.ts';

function wholeNumber(name: string, min: number, max: number) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
      throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}.`);
    }
    return parsed;
  };
}

export interface ReportCommandOptions {
  out: string;
  business?: number;
  days: number;
}

/** Adds `report` to the command line; the heavy modules load only when it runs. */
export function registerReportCommand(program: Command): void {
  program
    .command('report')
    .description(
      'Write a self-contained HTML report (rank trends, listing accuracy, new Inaccurate listings, reviews).',
    )
    .addOption(new Option('--out <file>', 'where to write the report').default('report.html'))
    .addOption(
      new Option('--business <id>', 'only this business').argParser(
        wholeNumber('--business', 1, Number.MAX_SAFE_INTEGER),
      ),
    )
    .addOption(
      new Option('--days <n>', 'days in the window, ending on the latest day with data')
        .default(90)
        .argParser(wholeNumber('--days', 1, 3660)),
    )
    .action(async (options: ReportCommandOptions) => {
      const config = loadCliConfig(undefined, 'report');
      const { openConfiguredWarehouse, requireCurrentSchema } = await import(
        '../warehouse/open.ts'
      );
      const { writeReport } = await import('./write-report.ts');
      const warehouse = await openConfiguredWarehouse(config, 'read');
      try {
        await requireCurrentSchema(warehouse);
        if (await warehouseIsEmpty(warehouse.db)) {
          process.stderr.write(
            `listings-sync: ${warehouse.target.description} holds no data yet: nothing to report. ` +
              'Run `listings-sync sync` first (or `npm start` for the demo).\n',
          );
          process.exitCode = 1;
          return;
        }
        const report = await writeReport(warehouse.db, {
          out: options.out,
          days: options.days,
          ...(options.business === undefined ? {} : { businessId: options.business }),
        });
        process.stdout.write(
          `Report of ${warehouse.target.description} (${report.data.firstDay} to ${report.data.lastDay}) written to ${report.path}\n`,
        );
      } finally {
        await warehouse.close();
      }
    });
}

/** No business and no rank day: a sync never ran (or loaded nothing), so there is nothing to chart. */
async function warehouseIsEmpty(db: import('kysely').Kysely<Database>): Promise<boolean> {
  const { rows } = await sql<{ any: boolean }>`
    select exists (select 1 from businesses) or exists (select 1 from rank_observations) as any`.execute(
    db,
  );
  return !rows[0]?.any;
}
