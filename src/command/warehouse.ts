/**
 * The warehouse a command works on: the configured one (src/warehouse/driver/open.ts), or, when
 * a test runs the command in-process, the test's own, already open (`io.services`). Every
 * command opens its warehouse here, so a test can hand any of them its warehouse.
 */
import type { Config } from '../config/index.ts';
import {
  type OpenOptions,
  openConfiguredWarehouse,
  type WarehouseAccess,
} from '../warehouse/driver/open.ts';
import type { CliIo } from './io.ts';

export function openCommandWarehouse(
  io: Pick<CliIo, 'services'>,
  config: Config,
  access: WarehouseAccess = 'write',
  options: Omit<OpenOptions, 'connect'> = {},
): ReturnType<typeof openConfiguredWarehouse> {
  const connect = io.services?.openWarehouse;
  return openConfiguredWarehouse(config, access, connect ? { ...options, connect } : options);
}
