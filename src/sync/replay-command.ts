/**
 * `listings-sync replay [--from DATE] [--to DATE] [--account NAME] [--business ID] --into SCHEMA`
 * (docs/operations.md, "Raw zone and replay"): rebuilds the warehouse from its raw zone
 * into a fresh schema of the same database. Progress goes to stderr, one line per run.
 */
import { type Config, ConfigError } from '../config/index.ts';
import type { Logger } from '../log.ts';
import { openConfiguredWarehouse, requireCurrentSchema } from '../warehouse/open.ts';
import { ReplayCoverageError, replay } from './replay.ts';

export interface ReplayCommandOptions {
  from?: string;
  to?: string;
  account?: string;
  business?: number;
  into: string;
}

export async function runReplayCommand(
  config: Config,
  options: ReplayCommandOptions,
  logger: Logger,
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream & { isTTY?: boolean } } = {
    stdout: process.stdout,
    stderr: process.stderr,
  },
): Promise<number> {
  const warehouse = await openConfiguredWarehouse(config);
  try {
    await requireCurrentSchema(warehouse);
    const result = await replay({
      warehouse,
      ...(warehouse.target.databaseUrl ? { databaseUrl: warehouse.target.databaseUrl } : {}),
      into: options.into,
      ...(options.from ? { from: options.from } : {}),
      ...(options.to ? { to: options.to } : {}),
      ...(options.account ? { account: options.account } : {}),
      ...(options.business !== undefined ? { businessId: options.business } : {}),
      alertRules: config.alertRules,
      // The replayed runs' own logs would repeat every night's: warnings and worse only.
      logger: logger.child({ replay: options.into }, { level: 'warn' }),
      onProgress: (p) => {
        const line = `replay: run ${p.runsDone}/${p.runsTotal} (${p.day})`;
        io.stderr.write(
          io.stderr.isTTY ? `\r${line}${p.runsDone === p.runsTotal ? '\n' : ''}` : `${line}\n`,
        );
      },
    });
    io.stdout.write(
      `Replayed ${result.runs} run(s), ${result.reads} kept reads, into schema "${options.into}" ` +
        `of ${warehouse.target.description} in ${result.seconds} s` +
        `${result.recovered ? `; ${result.recovered} quarantined record(s) recovered` : ''}.\n` +
        'Its alerts were recomputed and not delivered.\n',
    );
    return 0;
  } catch (error) {
    if (error instanceof ReplayCoverageError) throw new ConfigError(error.message);
    throw error;
  } finally {
    await warehouse.close();
  }
}
