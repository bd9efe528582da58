/**
 * Lineage never holds a run (docs/lineage.md): with the receiver down (a closed port) or
 * silent (it takes the request and never answers), `sync` exits as it would without
 * lineage, each emit cut at OPENLINEAGE__TRANSPORT__TIMEOUT (here 0.2 s: so the default
 * of 1 s bounds START and the last event to 2 s together); the failure is said once, at
 * warn, naming the receiver without its user or password and the reason. The file
 * transport writes one JSON event per line. Nothing of lineage loads when it is off.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_CALLS, startLineageRun, syncRunEnd, withLineage } from '../../src/lineage/run.ts';
import { lineageSettings } from '../../src/lineage/settings.ts';
import { runCli, type SyncCommandFixture, startSyncFixture } from '../helpers/cli.ts';
import { testBackends } from '../helpers/database.ts';
import { memoryLogger } from '../helpers/memory-logger.ts';
import { closedPort, specErrors, startReceiver } from './receiver.ts';

function warned(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((line) => line.includes('lineage event not sent'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe.each(testBackends)('a sync whose receiver is down or silent (%s)', (backend) => {
  let fixture: SyncCommandFixture;
  let env: Record<string, string>;
  beforeAll(async () => {
    fixture = await startSyncFixture(backend, {
      seed: 5,
      accounts: 1,
      businessesPerAccount: 1,
      startDate: '2026-07-01',
    });
    env = await fixture.prepare({ migrate: true });
  });
  afterAll(async () => {
    await fixture?.close();
  });

  it('down: the run exits 0 and says once that events were not sent, without credentials', async () => {
    const port = await closedPort();
    const result = await runCli(['sync'], {
      ...env,
      OPENLINEAGE_URL: `http://ol-user:ol-pass-789@127.0.0.1:${port}/`,
      // The default: a refused connection ends well before it, so the reason is the refusal.
      OPENLINEAGE__TRANSPORT__TIMEOUT: '1',
    });
    expect(result.code, result.stderr).toBe(0);
    const lines = warned(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'warn',
      receiver: `http://127.0.0.1:${port}/api/v1/lineage`,
      error: 'ECONNREFUSED',
    });
    expect(result.stderr + result.stdout).not.toContain('ol-pass-789');
    expect(result.stderr + result.stdout).not.toContain('ol-user');
  });

  it('silent: the run exits 0 while its events are unanswered, each cut at the timeout setting', async () => {
    const receiver = await startReceiver({ silent: true });
    try {
      const result = await runCli(['sync'], {
        ...env,
        OPENLINEAGE_URL: receiver.url,
        OPENLINEAGE__TRANSPORT__TIMEOUT: '0.2',
      });
      expect(result.code, result.stderr).toBe(0);
      // START, then the last event and the views' events: each taken, none answered.
      expect(receiver.runEvents().map((e) => e.eventType)).toEqual(['START', 'COMPLETE']);
      const lines = warned(result.stderr);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ error: 'timeout' });
      expect(result.stdout).toMatch(/Sync succeeded/);
    } finally {
      await receiver.close();
    }
  });

  it('the file transport appends one JSON event per line', async () => {
    const path = join(fixture.pgliteDir, '..', 'events.jsonl');
    const result = await runCli(['sync'], {
      ...env,
      OPENLINEAGE__TRANSPORT__TYPE: 'file',
      OPENLINEAGE__TRANSPORT__LOG_FILE_PATH: path,
    });
    expect(result.code, result.stderr).toBe(0);
    const events = readFileSync(path, 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const runs = events.filter((e) => 'run' in e);
    expect(runs.map((e) => e.eventType)).toEqual(['START', 'COMPLETE']);
    for (const event of events)
      expect(specErrors(event, 'run' in event ? 'run' : 'job')).toEqual([]);
  });
});

describe('lineage settings', () => {
  it('are off unless a transport is set, and off with OPENLINEAGE_DISABLED=true', () => {
    expect(lineageSettings({}, '1.0.0')).toBeUndefined();
    expect(
      lineageSettings(
        { OPENLINEAGE_URL: 'http://localhost:5000', OPENLINEAGE_DISABLED: 'true' },
        '1',
      ),
    ).toBeUndefined();
    expect(lineageSettings({ OPENLINEAGE_URL: 'http://localhost:5000' }, '1')).toMatchObject({
      transport: { type: 'http', url: 'http://localhost:5000', endpoint: 'api/v1/lineage' },
      namespace: 'default',
      timeoutMs: 1000,
      warehouseNamespace: 'pglite://embedded',
    });
  });

  it('name the warehouse by host and port only, and split the parent run id', () => {
    const settings = lineageSettings(
      {
        OPENLINEAGE_URL: 'http://localhost:5000',
        DATABASE_URL: 'postgres://etl:hunter2@db.internal/warehouse',
        OPENLINEAGE_PARENT_ID: 'airflow/dag.task/3F1A2B4C-5D6E-4F70-8A9B-0C1D2E3F4A5B',
      },
      '1',
    );
    expect(settings?.warehouseNamespace).toBe('postgres://db.internal:5432');
    expect(settings?.parent).toEqual({
      namespace: 'airflow',
      name: 'dag.task',
      runId: '3f1a2b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b',
    });
  });

  it('refuse a bad value, naming the variable', () => {
    expect(() =>
      lineageSettings({ OPENLINEAGE_URL: 'http://x', OPENLINEAGE_PARENT_ID: 'just-a-name' }, '1'),
    ).toThrow(/OPENLINEAGE_PARENT_ID must be namespace\/name\/run_id/);
    expect(() =>
      lineageSettings({ OPENLINEAGE_URL: 'http://x', OPENLINEAGE__TRANSPORT__TIMEOUT: '2s' }, '1'),
    ).toThrow(/OPENLINEAGE__TRANSPORT__TIMEOUT must be a number of seconds/);
    expect(() => lineageSettings({ OPENLINEAGE__TRANSPORT__TYPE: 'file' }, '1')).toThrow(
      /OPENLINEAGE__TRANSPORT__LOG_FILE_PATH/,
    );
  });
});

describe('nothing of lineage loads when it is off', () => {
  it('only src/lineage/run.ts, settings.ts and run-result.ts (node:fs alone) are imported from outside; run.ts loads the rest dynamically', () => {
    const src = join(import.meta.dirname, '../../src');
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory()
          ? files(join(dir, entry.name))
          : entry.name.endsWith('.ts')
            ? [join(dir, entry.name)]
            : [],
      );
    const lineage = join(src, 'lineage');
    const imported = new Set<string>();
    for (const file of files(src).filter((f) => !f.startsWith(lineage))) {
      for (const m of readFileSync(file, 'utf8').matchAll(
        /^import (?!type )[^;]*?from '([^']*lineage\/[^']+)'/gms,
      )) {
        imported.add(m[1]!.replace(/^.*lineage\//, ''));
      }
    }
    expect([...imported].sort()).toEqual(['run-result.ts', 'run.ts', 'settings.ts']);
    // Their own static imports reach nothing else of lineage but what carries no I/O.
    for (const entry of ['run.ts', 'settings.ts', 'run-result.ts']) {
      const text = readFileSync(join(lineage, entry), 'utf8');
      const statics = [...text.matchAll(/^import (?!type )[^;]*?from '\.\/([^']+)'/gms)].map(
        (m) => m[1],
      );
      expect(statics.every((name) => name === 'counts.ts')).toBe(true);
      if (entry === 'run.ts') expect(text).toContain("import('./emit.ts')");
    }
  });
});

describe("a run's last event", () => {
  it("is sent once: the end a failing run's finally adds after the recorded one does nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lineage-once-'));
    try {
      const path = join(dir, 'events.jsonl');
      const settings = lineageSettings(
        { OPENLINEAGE__TRANSPORT__TYPE: 'file', OPENLINEAGE__TRANSPORT__LOG_FILE_PATH: path },
        '1',
      );
      const run = withLineage(settings, () =>
        startLineageRun(
          {
            runId: '3f1a2b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b',
            command: 'sync',
            credentials: [{ name: 'east', baseUrl: 'https://api.example.com' }],
            streams: ['listings'],
          },
          { logger: memoryLogger().logger },
        ),
      );
      await run?.end(syncRunEnd('succeeded', {}, NO_CALLS, undefined));
      await run?.end(
        syncRunEnd('failed', {}, NO_CALLS, 'the run ended before its outcome was recorded'),
      );
      const types = readFileSync(path, 'utf8')
        .trimEnd()
        .split('\n')
        .map((line) => (JSON.parse(line) as { eventType?: string }).eventType)
        .filter(Boolean);
      expect(types).toEqual(['START', 'COMPLETE']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
