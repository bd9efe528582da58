/**
 * `nextLatest`, the nightly computation of a `rank_latest` row from the stored one, against
 * the definitions of `v_rank_latest` applied to the whole history of a series: any run of
 * nights (same-day reruns, gaps of a day to two months, unranked nights) must end in the
 * row the history gives.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type LatestState, nextLatest } from '../../src/warehouse/tables/rankings.ts';

const addDays = (day: string, n: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

/** v_rank_latest's columns, from every observation of one series (day → rank). */
function fromHistory(history: Map<string, number | null>) {
  const days = [...history.keys()].sort();
  const last = days.at(-1) as string;
  const lastOnOrBefore = (bound: string) => {
    const day = days.filter((d) => d <= bound).at(-1);
    return day === undefined
      ? { on: null, rank: null }
      : { on: day, rank: history.get(day) ?? null };
  };
  const previous = days.at(-2);
  const window = days.filter((d) => d >= addDays(last, -30));
  const ranked = window.map((d) => history.get(d)).filter((r): r is number => r != null);
  return {
    observed_on: last,
    rank: history.get(last) ?? null,
    previous_observed_on: previous ?? null,
    previous_rank: previous === undefined ? null : (history.get(previous) ?? null),
    compared_7d_on: lastOnOrBefore(addDays(last, -7)).on,
    rank_7d_ago: lastOnOrBefore(addDays(last, -7)).rank,
    compared_30d_on: lastOnOrBefore(addDays(last, -30)).on,
    rank_30d_ago: lastOnOrBefore(addDays(last, -30)).rank,
    best_rank_30d: ranked.length ? Math.min(...ranked) : null,
    worst_rank_30d: ranked.length ? Math.max(...ranked) : null,
    observations_30d: window.length,
    unranked_days_30d: window.length - ranked.length,
  };
}

function shown(row: LatestState) {
  const { window_collected, window_ranks, before_window_on, before_window_rank, ...columns } = row;
  return columns;
}

const night = fc.record({
  // 0: a second run the same day; up to two months without a collection.
  gap: fc.oneof(fc.constantFrom(0, 1, 1, 1, 2, 7, 30, 31), fc.integer({ min: 0, max: 62 })),
  rank: fc.option(fc.integer({ min: 1, max: 100 }), { freq: 4 }),
});

describe('nextLatest', () => {
  it('ends in the row the whole history gives, whatever the nights', () => {
    fc.assert(
      fc.property(fc.array(night, { minLength: 1, maxLength: 120 }), (nights) => {
        const history = new Map<string, number | null>();
        let day = '2025-01-01';
        let stored: LatestState | null = null;
        for (const [i, { gap, rank }] of nights.entries()) {
          if (i > 0) day = addDays(day, gap);
          history.set(day, rank);
          stored = nextLatest(stored, day, rank);
          expect(shown(stored)).toEqual(fromHistory(history));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the observation before the window for the 30-day comparison', () => {
    let row = nextLatest(null, '2025-01-01', 4);
    row = nextLatest(row, '2025-02-15', 9);
    expect(shown(row)).toMatchObject({
      previous_observed_on: '2025-01-01',
      compared_7d_on: '2025-01-01',
      rank_7d_ago: 4,
      compared_30d_on: '2025-01-01',
      rank_30d_ago: 4,
      observations_30d: 1,
    });
    expect(row.before_window_on).toBe('2025-01-01');
  });
});
