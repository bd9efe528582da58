/**
 * `--help` lists the variables a command reads. Every command that opens the configured
 * warehouse (through src/warehouse/driver/open.ts) applies the DATABASE_* timeouts to a
 * PostgreSQL one, every command whose writes re-sync a business raises alerts under
 * ALERT_RULES_FILE, and `check` validates that file: their help must say so.
 */
import { describe, expect, it } from 'vitest';
import { commandVariables } from '../../src/config/index.ts';

const OPENS_CONFIGURED_WAREHOUSE = [
  'migrate',
  'sync',
  'serve',
  'alerts',
  'check',
  'runs',
  'report',
  'api',
  'keywords',
  'warehouse',
];
/** Commands that raise alerts, and `check`, which validates the rules file. */
const READ_ALERT_RULES = ['sync', 'serve', 'api', 'keywords', 'check'];

describe('variables under each command’s --help', () => {
  it.each(OPENS_CONFIGURED_WAREHOUSE)('%s lists the database timeouts', (command) => {
    expect(commandVariables(command)).toEqual(
      expect.arrayContaining([
        'DATABASE_URL',
        'DATABASE_CONNECT_TIMEOUT_MS',
        'DATABASE_STATEMENT_TIMEOUT_MS',
        'DATABASE_LOCK_TIMEOUT_MS',
      ]),
    );
  });

  it.each(READ_ALERT_RULES)('%s lists ALERT_RULES_FILE', (command) => {
    expect(commandVariables(command)).toContain('ALERT_RULES_FILE');
  });
});
