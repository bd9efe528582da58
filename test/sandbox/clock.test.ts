/**
 * The clock: the same seed and day serve the same bytes; advancing the clock drifts
 * ranks, adds reviews, flips some listings, archives a few businesses and changes keywords.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { call, control } from './http.ts';

const options = { port: 0, seed: 21, accounts: 1, businessesPerAccount: 150 };
let a: RunningSandbox;
let b: RunningSandbox;

beforeAll(async () => {
  [a, b] = await Promise.all([startSandbox(options), startSandbox(options)]);
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
});

async function snapshot(sandbox: RunningSandbox, ids: number[]): Promise<string[]> {
  const c = sandbox.credentials[0]!;
  const bodies = [(await call(c, 'GET', '/businesses')).text];
  for (const id of ids) {
    for (const stream of [
      '',
      '/listings',
      '/reviews',
      '/reviews?category=social',
      '/rankings',
      '/keywords',
    ]) {
      const [path, query] = stream.split('?');
      const answer = await call(c, 'GET', `/businesses/${id}${path}`, {
        query: query ? Object.fromEntries(new URLSearchParams(query)) : {},
      });
      bodies.push(answer.text);
    }
  }
  return bodies;
}

async function listIds(sandbox: RunningSandbox): Promise<number[]> {
  return (await call(sandbox.credentials[0]!, 'GET', '/businesses')).json.result.map(
    (x: { id: number }) => x.id,
  );
}

describe('the clock', () => {
  it('reads and advances through the control endpoints', async () => {
    const other = await startSandbox({ port: 0, startDate: '2025-12-30' });
    try {
      expect((await control(other.baseUrl, 'GET', '/__sandbox/clock')).json).toEqual({
        date: '2025-12-30',
      });
      expect(
        (await control(other.baseUrl, 'POST', '/__sandbox/clock/advance', { days: 3 })).json,
      ).toEqual({ date: '2026-01-02' });
      expect(other.today()).toBe('2026-01-02');
      expect(
        (await control(other.baseUrl, 'POST', '/__sandbox/clock/advance', { days: -1 })).status,
      ).toBe(400);
    } finally {
      await other.close();
    }
  });

  it('serves the same bytes for the same seed and day, however the day was reached', async () => {
    const ids = (await listIds(a)).slice(0, 4);
    expect(await snapshot(a, ids)).toEqual(await snapshot(b, ids));
    a.advanceDays(2);
    a.advanceDays(3);
    b.advanceDays(5);
    const ids5 = (await listIds(a)).slice(0, 4);
    expect(await snapshot(a, ids5)).toEqual(await snapshot(b, ids5));
    const different = await startSandbox({ ...options, seed: 22 });
    try {
      expect((await call(different.credentials[0]!, 'GET', '/businesses')).text).not.toBe(
        (await call(a.credentials[0]!, 'GET', '/businesses')).text,
      );
    } finally {
      await different.close();
    }
  });

  it('changes the data as days pass', async () => {
    const fresh = await startSandbox(options);
    try {
      const c = fresh.credentials[0]!;
      const day0 = await listIds(fresh);
      expect(day0).toHaveLength(150);
      const collect = async (ids: number[]) => {
        const statuses = new Map<number, string>();
        const ranks = new Map<number, string>();
        const reviews = new Map<number, number>();
        const keywords = new Map<number, string>();
        for (const id of ids) {
          for (const l of (await call(c, 'GET', `/businesses/${id}/listings`)).json.result)
            statuses.set(l.id, l.status);
          ranks.set(id, (await call(c, 'GET', `/businesses/${id}/rankings`)).text);
          const r = (await call(c, 'GET', `/businesses/${id}/reviews`)).json.result;
          reviews.set(id, Object.values(r).flat().length);
          keywords.set(
            id,
            JSON.stringify((await call(c, 'GET', `/businesses/${id}/keywords`)).json.result),
          );
        }
        return { statuses, ranks, reviews, keywords };
      };
      const sample = day0.slice(0, 60);
      const before = await collect(sample);
      fresh.advanceDays(1);
      const alive = await listIds(fresh);
      const after = await collect(sample.filter((id) => alive.includes(id)));
      let flipped = 0;
      let compared = 0;
      for (const [id, status] of after.statuses) {
        compared++;
        if (before.statuses.get(id) !== status) flipped++;
      }
      // "A few percent a day".
      expect(flipped / compared).toBeGreaterThan(0.002);
      expect(flipped / compared).toBeLessThan(0.08);
      expect(
        [...after.ranks].filter(([id, text]) => before.ranks.get(id) !== text).length,
      ).toBeGreaterThan(0);
      const grew = [...after.reviews].filter(([id, n]) => n > (before.reviews.get(id) ?? 0)).length;
      expect(grew).toBeGreaterThan(0);

      fresh.advanceDays(59);
      const later = await listIds(fresh);
      const archived = day0.filter((id) => !later.includes(id));
      // Well under 1% a day: about 0.2% of 150 over 60 days.
      expect(archived.length).toBeGreaterThan(0);
      expect(archived.length).toBeLessThan(60);
      expect((await call(c, 'GET', `/businesses/${archived[0]}`)).json.message).toBe(
        "This business doesn't exist",
      );
      expect((await call(c, 'GET', `/businesses/${archived[0]}/keywords`)).json.message).toBe(
        'Invalid location id',
      );
      const laterKeywords = await collect(later.slice(0, 60));
      // Archiving is rare: well under 1% a day.
      expect(alive.length).toBeGreaterThan(140);
      const keywordChanges = [...laterKeywords.keywords].filter(
        ([id, text]) => before.keywords.has(id) && before.keywords.get(id) !== text,
      );
      expect(keywordChanges.length).toBeGreaterThan(0);
      const all = [...laterKeywords.keywords.values()].flatMap((t) => JSON.parse(t));
      expect(all.some((k: { archived: boolean }) => k.archived)).toBe(true);
      expect(all.some((k: { primary: unknown }) => k.primary === null)).toBe(true);
    } finally {
      await fresh.close();
    }
  });
});
