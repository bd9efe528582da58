/**
 * The table of error codes in docs/running.md ("Error codes") is the code's: every class
 * under src/ that extends ListingsSyncError is found by reading the files, imported, and
 * each code it can carry must have a row naming that class and its exit code; a code
 * listed twice must mean the same thing each time.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_ERROR_CODES } from '../../src/api/transport/errors.ts';
import { ListingsSyncError } from '../../src/errors.ts';
import { WAREHOUSE_COPY_ERROR_CODES } from '../../src/warehouse/driver/copy.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** `class X extends ListingsSyncError` (generic or not), per file; `exported` false fails below. */
function errorClassesInSource(): { file: string; name: string; exported: boolean }[] {
  return sourceFiles(SRC).flatMap((file) =>
    [
      ...readFileSync(file, 'utf8').matchAll(
        /(export )?class (\w+)(?:<[^>]*>)? extends ListingsSyncError\b/g,
      ),
    ].map((match) => ({ file, name: match[2] as string, exported: match[1] !== undefined })),
  );
}

type ErrorClass = new (...args: unknown[]) => ListingsSyncError;

/**
 * Classes whose code is chosen per instance: one instance per code each can carry. Every
 * other class is built from a message alone (its other parameters are ids or optional).
 */
const INSTANCES: Record<string, (Class: ErrorClass) => ListingsSyncError[]> = {
  ApiError: (Class) =>
    API_ERROR_CODES.map(
      (code) =>
        new Class({ code, operation: 'list_businesses', credentialName: 'c', detail: 'a message' }),
    ),
  WarehouseCopyError: (Class) =>
    WAREHOUSE_COPY_ERROR_CODES.map((code) => new Class(code, 'a message')),
};

interface CodeOfClass {
  name: string;
  code: string;
  exitCode: number;
}

/** Every (class, code) pair, read from instances: a class's `code` is an instance field. */
async function codesOfClasses(): Promise<CodeOfClass[]> {
  const pairs: CodeOfClass[] = [];
  for (const { file, name, exported } of errorClassesInSource()) {
    // An error a caller can branch on must be one it can import.
    if (!exported) throw new Error(`${relative(ROOT, file)}: export ${name}`);
    const module = (await import(file)) as Record<string, unknown>;
    const Class = module[name] as ErrorClass | undefined;
    if (typeof Class !== 'function') throw new Error(`${relative(ROOT, file)} exports no ${name}`);
    const instances = INSTANCES[name]?.(Class) ?? [new Class('a message')];
    for (const instance of instances) {
      expect(instance, name).toBeInstanceOf(ListingsSyncError);
      pairs.push({ name, code: instance.code, exitCode: instance.exitCode });
    }
  }
  return pairs;
}

interface TableRow {
  code: string;
  classes: string[];
  exitCode: number;
  meaning: string;
}

/** The rows of the table under `### Error codes` in docs/running.md. */
function documentedCodes(): TableRow[] {
  const text = readFileSync(join(ROOT, 'docs/running.md'), 'utf8');
  const section = /\n### Error codes\n([\s\S]*?)\n#/.exec(text)?.[1] ?? '';
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [code, classes, exit, meaning] = line
        .split(' | ')
        .map((cell) => cell.replace(/^\| /, '').trim());
      return {
        code: (code ?? '').replaceAll('`', ''),
        classes: [...(classes ?? '').matchAll(/`(\w+)`/g)].map((m) => m[1] as string),
        exitCode: Number(exit),
        meaning: meaning ?? '',
      };
    });
}

describe('error codes (docs/running.md, "Error codes")', () => {
  const rows = documentedCodes();

  it('reads the classes and the table: both are there', () => {
    // A walker or a parser that found nothing would pass every check below.
    const names = errorClassesInSource().map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(['ConfigError', 'UsageError', 'SyncLockedError']));
    expect(rows.length).toBeGreaterThan(10);
    expect(rows.find((row) => row.code === 'USAGE')).toMatchObject({
      classes: ['UsageError'],
      exitCode: 2,
    });
  });

  it('lists every code of every ListingsSyncError subclass, with its class and exit code', async () => {
    const missing = (await codesOfClasses())
      .filter(
        ({ name, code, exitCode }) =>
          !rows.some(
            (row) => row.code === code && row.classes.includes(name) && row.exitCode === exitCode,
          ),
      )
      .map(({ name, code, exitCode }) => `${code} (${name}, exit ${exitCode})`);
    expect(missing).toEqual([]);
  });

  it('gives each code one meaning', () => {
    const meanings = new Map<string, Set<string>>();
    for (const row of rows) {
      meanings.set(row.code, (meanings.get(row.code) ?? new Set()).add(row.meaning));
    }
    const twice = [...meanings].filter(([, set]) => set.size > 1).map(([code]) => code);
    expect(twice).toEqual([]);
  });

  it('names only classes that exist in src/', () => {
    const exported = new Set(
      sourceFiles(SRC).flatMap((file) =>
        [...readFileSync(file, 'utf8').matchAll(/export class (\w+)/g)].map((m) => m[1] as string),
      ),
    );
    const unknown = rows.flatMap((row) => row.classes.filter((name) => !exported.has(name)));
    expect(unknown).toEqual([]);
  });
});
