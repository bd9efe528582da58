/**
 * The dependency direction of the alert module: `sync`, `serve` and the CLI use
 * `src/alerts`; `src/alerts` uses neither `sync` nor `serve`; and nothing under `src/sync`
 * imports `src/serve` (the cycle alerts once made). Read from the import statements.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** The folders under src/ a file imports from (static and dynamic imports). */
function importedFolders(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import\()\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map(
    (m) => m[1]!,
  );
  return specifiers.map((s) => relative(SRC, resolve(file, '..', s)).split('/')[0]!);
}

/**
 * The warehouse modules of the alert module: every statement on `alerts` and `alert_sinks`
 * (the one home of SQL is src/warehouse).
 */
const ALERT_TABLE_MODULES = ['alerts/outbox-rows.ts', 'alerts/sink-rows.ts'];

function importsOf(folder: string): Map<string, string[]> {
  return new Map(
    sourceFiles(join(SRC, folder)).map((file) => [relative(SRC, file), importedFolders(file)]),
  );
}

describe('module boundaries', () => {
  it('src/sync imports nothing from src/serve', () => {
    const offenders = [...importsOf('sync')].filter(([, folders]) => folders.includes('serve'));
    expect(offenders).toEqual([]);
  });

  it('src/alerts imports neither src/sync nor src/serve', () => {
    const offenders = [...importsOf('alerts')].filter(([, folders]) =>
      folders.some((f) => f === 'sync' || f === 'serve'),
    );
    expect(offenders).toEqual([]);
  });

  it('alert SQL lives in src/warehouse/alert-*.ts, sinks and rules in src/alerts: no alert module is left elsewhere', () => {
    const stray = sourceFiles(SRC)
      .map((file) => relative(SRC, file))
      // The `alerts` command's own files (src/cli/commands: the command and its table) hold
      // no SQL: the check below says so.
      .filter((file) => /alert/.test(file) && !file.startsWith('alerts/'))
      .filter((file) => file !== 'cli/commands/alerts.ts' && file !== 'cli/commands/alert-list.ts')
      // The rules file's schema is configuration, read by the base (src/config imports
      // nothing of ours); the rules that raise from it are src/alerts'.
      .filter((file) => file !== 'config/alert-rules.ts')
      // The alert module's statements (docs/warehouse.md, "alerts", "alert_sinks").
      .filter((file) => !ALERT_TABLE_MODULES.includes(file));
    expect(stray).toEqual([]);
    const inserts = sourceFiles(SRC)
      .filter((file) => !ALERT_TABLE_MODULES.includes(relative(SRC, file)))
      .filter((file) =>
        /insertInto\(\s*'alerts'|insert into alerts|updateTable\(\s*'alerts'/.test(
          readFileSync(file, 'utf8'),
        ),
      );
    expect(inserts).toEqual([]);
  });

  it('sync, serve and the CLI reach alerts through src/alerts', () => {
    expect(importsOf('cli').get('cli/commands/sync.ts')).toContain('alerts');
    expect(importsOf('serve').get('serve/server.ts')).toContain('alerts');
    expect(importedFolders(join(SRC, 'cli/commands/alerts.ts'))).toContain('alerts');
  });
});
