/**
 * `listings-sync runs`: a run that is `partial` because one credential was refused counts
 * that credential in its failures column, not 0 beside the word partial; each run shows
 * the upstream day it read. What a real warehouse's runs read as: test/demo/demo.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { type RunLine, renderRuns } from '../../src/cli/commands/runs-table.ts';

describe('runs table', () => {
  it('counts failed credentials, businesses and streams as failures', () => {
    const text = renderRuns([
      {
        runId: 'b275d8c7-0971-41a2-bf20-584b88e93bf7',
        startedAt: new Date('2026-03-10T03:00:00.000Z'),
        finishedAt: new Date('2026-03-10T03:00:00.900Z'),
        status: 'partial',
        trigger: 'cli',
        shard: null,
        upstreamDays: { first: '2026-03-09', last: '2026-03-09' },
        error:
          'credential "east": list_businesses on credential "east" failed: Authentication Failure',
        stats: {
          credentials: [
            { name: 'east', status: 'failed', businesses: 0, error: 'Authentication Failure' },
            { name: 'west', status: 'partial', businesses: 25 },
          ],
          businesses: { listed: 25, inShard: 25, synced: 24, failed: 1, archived: 0 },
          streamFailures: 1,
          requests: 159,
          quarantined: 0,
          alerts: 0,
          failures: [],
        },
      },
    ]);
    const row = text.split('\n')[2] ?? '';
    expect(row.trim().split(/\s{2,}/)).toEqual([
      '2026-03-10 03:00:00',
      '2026-03-09',
      'partial',
      'cli',
      '0.9 s',
      '24/25',
      '159',
      '0',
      '0',
      '3',
    ]);
    expect(text).toContain('Authentication Failure');
  });

  it('shows the upstream day each run read, both days of a run across midnight, – with none kept', () => {
    const run = (startedAt: string, upstreamDays: RunLine['upstreamDays']): RunLine => ({
      runId: `run-${startedAt}`,
      startedAt: new Date(startedAt),
      finishedAt: new Date(startedAt),
      status: 'succeeded',
      trigger: 'demo',
      shard: null,
      error: null,
      stats: null,
      upstreamDays,
    });
    const rows = renderRuns([
      run('2026-03-11T07:00:02.000Z', { first: '2026-03-10', last: '2026-03-10' }),
      run('2026-03-11T07:00:01.000Z', { first: '2026-03-08', last: '2026-03-09' }),
      run('2026-03-11T07:00:00.000Z', null),
    ])
      .split('\n')
      .slice(0, 5)
      .map((line) => line.trim().split(/\s{2,}/));
    expect(rows[0]?.slice(0, 3)).toEqual(['started (UTC)', 'upstream day', 'status']);
    expect(rows.slice(2).map((cells) => cells.slice(0, 3))).toEqual([
      ['2026-03-11 07:00:02', '2026-03-10', 'succeeded'],
      ['2026-03-11 07:00:01', '2026-03-08 … 2026-03-09', 'succeeded'],
      ['2026-03-11 07:00:00', '–', 'succeeded'],
    ]);
  });
});
