/**
 * The rules that read a run's outcome, each in the module that owns it: the run's status
 * from its counts (src/sync/stats.ts) and which database errors end a run
 * (src/warehouse/driver/outage.ts).
 */
import { describe, expect, it } from 'vitest';
import {
  decideStatus,
  emptyStats,
  MAX_FAILURES_LISTED,
  type RunStats,
  recordFailure,
  summariseFailures,
} from '../../src/sync/stats.ts';
import { isWarehouseGone, WarehouseGoneError } from '../../src/warehouse/driver/outage.ts';

function statsWith(change: (stats: RunStats) => void): RunStats {
  const stats = emptyStats();
  change(stats);
  return stats;
}

const ok = (name: string) => ({ name, status: 'succeeded' as const, businesses: 1 });
const failed = (name: string) => ({
  name,
  status: 'failed' as const,
  businesses: 0,
  error: 'Authentication Failure',
});

describe('decideStatus', () => {
  it('a clean run succeeds; any failure or quarantined record makes it partial', () => {
    expect(
      decideStatus(
        statsWith((s) => s.credentials.push(ok('a'))),
        undefined,
      ),
    ).toBe('succeeded');
    for (const change of [
      (s: RunStats) => s.credentials.push(failed('b')),
      (s: RunStats) => s.credentials.push({ ...ok('b'), status: 'partial' }),
      (s: RunStats) => {
        s.businesses.failed = 1;
      },
      (s: RunStats) => {
        s.streamFailures = 1;
      },
      (s: RunStats) => {
        s.quarantined = 1;
      },
    ]) {
      const stats = statsWith((s) => {
        s.credentials.push(ok('a'));
        change(s);
      });
      expect(decideStatus(stats, undefined)).toBe('partial');
    }
  });

  it('fails when every credential failed or the warehouse went away; a stop is interrupted', () => {
    const allFailed = statsWith((s) => s.credentials.push(failed('a'), failed('b')));
    expect(decideStatus(allFailed, undefined)).toBe('failed');
    expect(summariseFailures(allFailed)).toBe(
      'credential "a": Authentication Failure; credential "b": Authentication Failure',
    );
    const clean = statsWith((s) => s.credentials.push(ok('a')));
    expect(decideStatus(clean, new Error('gone'))).toBe('failed');
    const stop = new AbortController();
    stop.abort();
    expect(decideStatus(clean, undefined, stop.signal)).toBe('interrupted');
    // The warehouse failing outranks a stop.
    expect(decideStatus(clean, new Error('gone'), stop.signal)).toBe('failed');
    expect(summariseFailures(clean)).toBeUndefined();
  });

  it('lists at most MAX_FAILURES_LISTED failures, redacted and cut to 300 characters', () => {
    const stats = emptyStats();
    for (let i = 0; i < MAX_FAILURES_LISTED + 5; i++) {
      recordFailure(stats, {
        credential: 'a',
        businessId: i,
        stream: 'listings',
        reason: `GET /listings?auth_token=sbx_secret_value_${i} ${'x'.repeat(400)}`,
      });
    }
    expect(stats.failures).toHaveLength(MAX_FAILURES_LISTED);
    for (const failure of stats.failures) {
      expect(failure.reason.length).toBeLessThanOrEqual(300);
      expect(failure.reason).not.toContain('sbx_secret_value');
    }
  });
});

describe('isWarehouseGone', () => {
  it('is true for a lost connection, a shutdown or no answer in time', () => {
    const coded = (code: string) => Object.assign(new Error('x'), { code });
    for (const error of [
      coded('ECONNREFUSED'),
      coded('57P01'),
      coded('08006'),
      new Error('Connection terminated unexpectedly'),
      new Error('PGlite is closed'),
      new Error('Query read timeout'),
    ]) {
      expect(isWarehouseGone(error), String(error)).toBe(true);
    }
  });

  it('is false for a statement that failed on a database that answers', () => {
    const coded = (code: string) => Object.assign(new Error('x'), { code });
    for (const error of [
      coded('23505'), // unique_violation
      coded('57014'), // a statement timeout: the server answered
      new Error('timeout exceeded when trying to connect'), // a busy pool
      'not an error',
      null,
    ]) {
      expect(isWarehouseGone(error), String(error)).toBe(false);
    }
  });

  it('says what stopped answering and that committed businesses are kept', () => {
    const error = new WarehouseGoneError(new Error('Query read timeout'), undefined);
    expect(error.message).toMatch(/^The warehouse stopped answering \(the database did not answer/);
    expect(error.message).toContain('Businesses committed before this point are kept');
  });
});
