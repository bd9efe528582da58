/**
 * `listings-sync report [--out report.html] [--business ID] [--days 90]`: the HTML report
 * of the configured warehouse (`DATABASE_URL`, or the embedded PGlite).
 */
import { type Command, Option } from 'commander';
import { requireCurrentSchema } from '../../warehouse/driver/open.ts';
import { EXIT } from '../command/exit-codes.ts';
import type { CliIo } from '../command/io.ts';
import { loadCommandConfig } from '../command/settings-bridge.ts';
import { openCommandWarehouse } from '../command/warehouse.ts';
import { integerOption } from '../options.ts';

export interface ReportCommandOptions {
  out: string;
  business?: number;
  days: number;
}

/** Adds `report` to the command line; the heavy modules load only when it runs. */
export function registerReportCommand(program: Command, io: CliIo): void {
  program
    .command('report')
    .description(
      'Write a self-contained HTML report (scorecard by health, visibility per site, rank trends, listing accuracy, new Inaccurate listings, reviews).',
    )
    .addOption(new Option('--out <file>', 'where to write the report').default('report.html'))
    .addOption(
      new Option('--business <id>', 'only this business').argParser(integerOption('--business', 1)),
    )
    .addOption(
      new Option('--days <n>', 'days in the window, ending on the latest day with data')
        .default(90)
        .argParser(integerOption('--days', 1, 3660)),
    )
    .action(async (options: ReportCommandOptions) => {
      io.exitCode = await runReportCommand(io, options);
    });
}

async function runReportCommand(io: CliIo, options: ReportCommandOptions): Promise<number> {
  const config = loadCommandConfig(io, 'report');
  const { writeReport } = await import('../../report/write-report.ts');
  const { warehouseIsEmpty } = await import('../../report/queries/window.ts');
  const warehouse = await openCommandWarehouse(io, config, 'read');
  try {
    await requireCurrentSchema(warehouse);
    if (await warehouseIsEmpty(warehouse.db)) {
      io.stderr(
        `listings-sync: ${warehouse.target.description} holds no data yet: nothing to report. ` +
          'Run `listings-sync sync` first (or `npm start` for the demo).\n',
      );
      return EXIT.fatal;
    }
    const report = await writeReport(warehouse.db, {
      out: options.out,
      days: options.days,
      ...(options.business === undefined ? {} : { businessId: options.business }),
    });
    io.stdout(
      `Report of ${warehouse.target.description} (${report.data.firstDay} to ${report.data.lastDay}) written to ${report.path}\n`,
    );
    return EXIT.ok;
  } finally {
    await warehouse.close();
  }
}
