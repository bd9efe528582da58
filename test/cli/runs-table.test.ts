/**
 * `listings-sync runs`: a run that is `partial` because one credential was refused counts
 * that credential in its failures column, not 0 beside the word partial.
 */
import { describe, expect, it } from 'vitest';
import { renderRuns } from '../../src/cli/commands/runs-table.ts';

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
});
