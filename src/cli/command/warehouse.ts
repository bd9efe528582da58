/**
 * The warehouse a command works on: the configured one (src/warehouse/driver/open.ts), or, when
 * a test runs the command in-process, the test's own, already open (`io.services`). Every
 * command opens its warehouse here, so a test can hand any of them its warehouse, and a
 * read that falls back to the demo's warehouse says so here, in one line for every command.
 */
import type { Config } from '../../config/index.ts';
import {
  type OpenOptions,
  openConfiguredWarehouse,
  type WarehouseAccess,
  type WarehouseTarget,
} from '../../warehouse/driver/open.ts';
import type { CliIo } from './io.ts';

/**
 * What a read command says when it falls back to the demo's warehouse (`resolveWarehouse`,
 * README.md, "Quick start"): which one it reads, and why. On standard error, so that what
 * the command prints (a table, `raw show --raw`'s bodies) stays what it was.
 */
export function demoFallbackNotice(config: Config, target: WarehouseTarget): string {
  return (
    `listings-sync: reading ${target.description}: neither DATABASE_URL nor PGLITE_DATA_DIR ` +
    `is set, and ${config.pgliteDataDir} holds no database (commands that write never fall back).\n`
  );
}

export async function openCommandWarehouse(
  io: Pick<CliIo, 'services' | 'stderr'>,
  config: Config,
  access: WarehouseAccess = 'write',
  options: Omit<OpenOptions, 'connect'> = {},
): ReturnType<typeof openConfiguredWarehouse> {
  const connect = io.services?.openWarehouse;
  const warehouse = await openConfiguredWarehouse(
    config,
    access,
    connect ? { ...options, connect } : options,
  );
  if (warehouse.target.demo) io.stderr(demoFallbackNotice(config, warehouse.target));
  return warehouse;
}
