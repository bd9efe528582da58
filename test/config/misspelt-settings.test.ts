/**
 * Settings that cannot silently miss: a variable that looks like a misspelt setting stops
 * a command that would otherwise run on that setting's default, naming both variables;
 * elsewhere it is a warning, and `config` always prints.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.ts';

function refusal(env: Record<string, string>, command: string): string {
  try {
    loadConfig(env, { command });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`expected \`${command}\` to refuse ${JSON.stringify(Object.keys(env))}`);
}

const TYPO = { DATABSE_URL: 'postgres://u:hunter2@db/w' };

describe('a misspelt setting', () => {
  it('stops a command that reads the setting it resembles, naming both', () => {
    for (const command of ['sync', 'migrate', 'serve', 'report', 'runs', 'check', 'api']) {
      const message = refusal(TYPO, command);
      expect(message).toBe(
        'DATABSE_URL is set, but listings-sync reads no such variable: did you mean DATABASE_URL? ' +
          `\`${command}\` reads DATABASE_URL, which is not set, so it would run on its default ` +
          '(unset: the embedded PGlite in PGLITE_DATA_DIR). Rename DATABSE_URL to DATABASE_URL, or unset DATABSE_URL.',
      );
      expect(message).not.toContain('hunter2');
    }
  });

  it('stops a command that would run without a credential', () => {
    const env = {
      LISTINGS_BASE_URL: 'https://api.example.com',
      LISTINGS_AUTH_TOKN: 'tok',
      LISTINGS_USER_EMAIL: 'a@b.c',
    };
    expect(refusal(env, 'sync')).toContain(
      'LISTINGS_AUTH_TOKN is set, but listings-sync reads no such variable: did you mean LISTINGS_AUTH_TOKEN? `sync` reads LISTINGS_AUTH_TOKEN',
    );
    expect(refusal({ LISTINGS_CREDENTIALS_FIEL: 'c.json' }, 'check')).toContain(
      'did you mean LISTINGS_CREDENTIALS_FILE?',
    );
  });

  it('lists every such variable at once', () => {
    const message = refusal({ ...TYPO, PROT: '9000', SYNC_SCHEDUEL: 'off' }, 'serve');
    expect(message.split('\n')).toEqual([
      'Variables look like misspelt settings:',
      expect.stringMatching(/^ {2}- DATABSE_URL is set, .* did you mean DATABASE_URL\?/),
      expect.stringMatching(/^ {2}- PROT is set, .* did you mean PORT\? `serve` reads PORT/),
      expect.stringMatching(/^ {2}- SYNC_SCHEDUEL is set, .* did you mean SYNC_SCHEDULE\?/),
    ]);
  });

  it('only warns where the command does not read the setting, or the setting is set', () => {
    // `sandbox` reads no warehouse; `sync` reads no PORT.
    for (const [env, command] of [
      [TYPO, 'sandbox'],
      [{ PROT: '1' }, 'sync'],
      [{ ...TYPO, DATABASE_URL: 'postgres://db/w' }, 'sync'],
    ] as const) {
      const config = loadConfig(env, { command });
      expect(config.misspellings.length, command).toBe(1);
      expect(config.warnings[0], command).toMatch(
        /is set, but listings-sync reads no such variable/,
      );
    }
  });

  it('never stops `config`, nor a load for no command', () => {
    for (const options of [{ command: 'config' }, {}]) {
      const config = loadConfig(TYPO, options);
      expect(config.misspellings).toEqual([{ name: 'DATABSE_URL', meant: 'DATABASE_URL' }]);
      expect(config.databaseUrl).toBeUndefined();
      expect(config.warnings.join(' ')).not.toContain('hunter2');
    }
  });
});
