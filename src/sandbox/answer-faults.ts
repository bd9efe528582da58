/**
 * Scripted faults that bend a real answer instead of replacing it (docs/upstream.md, "What
 * the sandbox assumes", Faults): `oversized` (one business brings far too many keywords,
 * sites, reviews, listings or businesses), `duplicate` (the first record twice, the copies
 * identical or disagreeing), `empty` (`success: true` with nothing), and `drip` (the answer sent as
 * headers at once, then its body a few bytes at a time; see server.ts).
 *
 * They apply to successful list reads only (operations 1, 7, 8, 11 and 12); any other
 * answer passes unchanged.
 */

/** The operations whose answers these faults reshape. */
const LIST_OPERATIONS: ReadonlySet<string> = new Set([
  'list_businesses',
  'list_listings',
  'list_reviews',
  'get_rankings',
  'list_keywords',
]);

export interface AnswerFault {
  kind: 'oversized' | 'duplicate' | 'empty';
  /** `oversized`: records in the answer (keywords, reviews, listings, businesses). */
  count?: number;
  /** `oversized` on get_rankings: search sites under each keyword. */
  sitesPerKeyword?: number;
  /** `duplicate`: whether the copy agrees with the original. */
  copies?: 'identical' | 'disagreeing';
}

export const DEFAULT_OVERSIZED_COUNT = 100_000;
export const DEFAULT_SITES_PER_KEYWORD = 4;

/** The body with the fault applied, or undefined when it does not apply to this answer. */
export function reshapeAnswer(
  operation: string,
  body: string,
  fault: AnswerFault,
): string | undefined {
  if (!LIST_OPERATIONS.has(operation)) return undefined;
  const parsed = JSON.parse(body) as { success?: unknown; result?: unknown };
  if (parsed.success !== true) return undefined;
  const result = reshapeResult(operation, parsed.result, fault);
  return result === undefined ? undefined : `{"success":true,"result":${JSON.stringify(result)}}`;
}

function reshapeResult(operation: string, result: unknown, fault: AnswerFault): unknown {
  if (fault.kind === 'empty') return [];
  if (operation === 'get_rankings') {
    if (fault.kind === 'duplicate') return undefined; // a JSON object cannot repeat a key
    return oversizedRankings(
      fault.count ?? DEFAULT_OVERSIZED_COUNT,
      fault.sitesPerKeyword ?? DEFAULT_SITES_PER_KEYWORD,
    );
  }
  if (operation === 'list_reviews') return reshapeReviews(result, fault);
  if (!Array.isArray(result) || result.length === 0) return undefined;
  const records = result as Record<string, unknown>[];
  const first = records[0] as Record<string, unknown>;
  if (fault.kind === 'duplicate') {
    if (operation === 'list_listings') {
      // A listing with the full form, so that the changed status is the only difference.
      const listed = records.find(
        (r) => r['status'] === 'Accurate' || r['status'] === 'Inaccurate',
      );
      if (listed) {
        const copy = fault.copies === 'disagreeing' ? disagree(operation, listed) : { ...listed };
        return [...records, copy];
      }
    }
    const copy = fault.copies === 'disagreeing' ? disagree(operation, first) : { ...first };
    return [...result, copy];
  }
  const count = fault.count ?? DEFAULT_OVERSIZED_COUNT;
  const out: unknown[] = [];
  const base = typeof first['id'] === 'number' ? first['id'] : 1;
  for (let i = 0; i < count; i++) {
    const clone: Record<string, unknown> = { ...first, id: base * 1_000_000 + i };
    if (operation === 'list_keywords') clone['keyword'] = `keyword ${i}`;
    out.push(clone);
  }
  return out;
}

function oversizedRankings(count: number, sites: number): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (let i = 0; i < count; i++) {
    const ranks: Record<string, number> = {};
    for (let j = 0; j < sites; j++) ranks[`Site${j}`] = 1 + ((i + j) % 100);
    out[`keyword ${i}`] = ranks;
  }
  return out;
}

function reshapeReviews(result: unknown, fault: AnswerFault): unknown {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return undefined;
  const bySite = result as Record<string, unknown>;
  const site = Object.keys(bySite).find((name) => {
    const items = bySite[name];
    return Array.isArray(items) && items.length > 0;
  });
  if (site === undefined) return undefined;
  const items = bySite[site] as Record<string, unknown>[];
  const first = items[0] as Record<string, unknown>;
  if (fault.kind === 'duplicate') {
    const copy =
      fault.copies === 'disagreeing'
        ? { ...first, rating: first['rating'] === 1 ? 5 : 1 }
        : { ...first };
    return { ...bySite, [site]: [...items, copy] };
  }
  const count = fault.count ?? DEFAULT_OVERSIZED_COUNT;
  const many: unknown[] = [];
  for (let i = 0; i < count; i++) {
    many.push({ ...first, id: `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}` });
  }
  return { [site]: many };
}

/** A copy of the record that differs in one field the warehouse stores. */
function disagree(operation: string, record: Record<string, unknown>): Record<string, unknown> {
  switch (operation) {
    case 'list_listings':
      return { ...record, status: record['status'] === 'Accurate' ? 'Inaccurate' : 'Accurate' };
    case 'list_keywords':
      return { ...record, keyword: `${String(record['keyword'])} (copy)` };
    default:
      return { ...record, name: `${String(record['name'])} (copy)` };
  }
}
