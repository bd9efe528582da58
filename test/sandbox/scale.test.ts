/**
 * A big world starts at once (nothing is generated up front) and stays responsive.
 * No timing assertions (speed lives in `npm run bench`): the proof that nothing is
 * generated up front is that 10,000 businesses list and read within the test's timeout.
 */
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/server.ts';
import { call } from './http.ts';

describe('a big world', () => {
  it('starts quickly with 2 x 5000 businesses and serves lists and first reads', async () => {
    const sandbox = await startSandbox({ port: 0, seed: 77, businessesPerAccount: 5000 });
    try {
      const c = sandbox.credentials[1]!;
      const list = await call(c, 'GET', '/businesses');
      expect(list.json.result).toHaveLength(5000);
      const ids: number[] = list.json.result.map((b: { id: number }) => b.id);
      expect(new Set(ids).size).toBe(5000);
      const sample = [ids[0]!, ids[2500]!, ids[4999]!];
      const reads = await Promise.all(
        sample.flatMap((id) =>
          ['', '/listings', '/reviews', '/rankings', '/keywords'].map((s) =>
            call(c, 'GET', `/businesses/${id}${s}`),
          ),
        ),
      );
      for (const r of reads) expect(r.json.success).toBe(true);
      // Cached: a second list is the same bytes.
      expect((await call(c, 'GET', '/businesses')).text).toBe(list.text);
    } finally {
      await sandbox.close();
    }
  });
});
