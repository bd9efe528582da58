import { z } from 'zod';
import { isDeepStrictEqual } from 'node:util';
import { startSandbox } from './src/sandbox/server.ts';
import { reviewSchema, listingSchema, rankingEntrySchema } from './src/api/schemas.ts';
const sb = await startSandbox({ seed: 42, accounts: 1, businessesPerAccount: 60, port: 0 });
const cred = sb.credentials[0]!;
const q = `auth_token=${encodeURIComponent(cred.authToken)}&user_email=${encodeURIComponent(cred.userEmail)}`;
const base = `${cred.baseUrl}/api/v2`;
const list = await (await fetch(`${base}/businesses.json?${q}`)).json() as any;
const ids = (list.result ?? list.businesses ?? list).map?.((b: any) => b.id) ?? [];
const reviews: unknown[] = []; const listings: unknown[] = [];
for (const id of ids) {
  const r = await (await fetch(`${base}/businesses/${id}/reviews.json?category=review&${q}`)).json() as any;
  for (const items of Object.values(r.result ?? {})) if (Array.isArray(items)) reviews.push(...items);
  const l = await (await fetch(`${base}/businesses/${id}/listings.json?${q}`)).json() as any;
  if (Array.isArray(l.result)) listings.push(...l.result);
}
await sb.close();
console.log('reviews', reviews.length, 'listings', listings.length);
for (const [name, schema, items] of [['review', reviewSchema, reviews], ['listing', listingSchema, listings]] as const) {
  const compiled = z.compile(schema as z.ZodType);
  let same = 0;
  for (const x of items) { const a = (schema as z.ZodType).safeParse(x); const b = compiled.safeParse(x); if (isDeepStrictEqual(a, b)) same++; else if (same < 3) console.log('DIFF', JSON.stringify(a).slice(0,300), JSON.stringify(b).slice(0,300)); }
  console.log(name, 'same', same, 'of', items.length);
  for (const [label, s] of [['runtime', schema], ['compiled', compiled], ['runtime', schema], ['compiled', compiled]] as const) {
    const t0 = process.cpuUsage(); const m0 = process.memoryUsage().heapUsed;
    let n = 0;
    for (let k = 0; k < 20; k++) for (const x of items) if ((s as z.ZodType).safeParse(x).success) n++;
    const u = process.cpuUsage(t0);
    console.log(`  ${name} ${label}: ${((u.user + u.system) / 1000).toFixed(0)} ms for ${n} parses`);
  }
}
