/** Where each setting came from, and the variables that look like a misspelt setting. */
import { describe, expect, it } from 'vitest';
import { loadConfig, misspeltVariables } from '../../src/config/index.ts';

describe('misspelt settings', () => {
  it('finds names within an edit or two of a setting, in any case', () => {
    expect(
      misspeltVariables({
        DATABSE_URL: 'postgres://x/y',
        database_url: 'postgres://x/y',
        LISTINGS_AUTH_TOKN: 't',
        PORTS: '80',
        SYNC_CONCURENCY: '4',
      }),
    ).toEqual([
      { name: 'DATABSE_URL', meant: 'DATABASE_URL' },
      { name: 'database_url', meant: 'DATABASE_URL' },
      { name: 'LISTINGS_AUTH_TOKN', meant: 'LISTINGS_AUTH_TOKEN' },
      { name: 'PORTS', meant: 'PORT' },
      { name: 'SYNC_CONCURENCY', meant: 'SYNC_CONCURRENCY' },
    ]);
  });

  it('leaves the usual environment alone', () => {
    const usual = [
      'PATH',
      'HOME',
      'USER',
      'SHELL',
      'PWD',
      'TERM',
      'LANG',
      'NODE_ENV',
      'HOSTNAME',
      'TMPDIR',
      'PGHOST',
      'PGPORT',
      'PGUSER',
      'CI',
      'TZ',
      'EDITOR',
      'LOGNAME',
      'SHLVL',
      'OLDPWD',
      'DISPLAY',
      'NODE_OPTIONS',
      'npm_config_cache',
      'COLORTERM',
      'KUBERNETES_PORT',
      'DATABASE_URL',
      'LOG_LEVEL',
    ];
    expect(misspeltVariables(Object.fromEntries(usual.map((name) => [name, 'x'])))).toEqual([]);
  });

  it('warns in the configuration, saying whether the meant variable is set', () => {
    const config = loadConfig({ DATABSE_URL: 'postgres://u:secret@h/d', PORT: '9000', PROT: '1' });
    expect(config.warnings).toEqual([
      'DATABSE_URL is set, but listings-sync reads no such variable: did you mean DATABASE_URL? (DATABASE_URL is not set, so its default applies)',
      'PROT is set, but listings-sync reads no such variable: did you mean PORT?',
    ]);
    expect(config.warnings.join(' ')).not.toContain('secret');
  });
});

describe('sources', () => {
  it('records env for what the environment set, default for the rest', () => {
    const config = loadConfig({ SYNC_CONCURRENCY: '4', LOG_LEVEL: ' ' });
    expect(config.sources.SYNC_CONCURRENCY).toBe('env');
    expect(config.sources.LOG_LEVEL).toBe('default');
    expect(config.sources.DATABASE_URL).toBe('default');
  });
});
