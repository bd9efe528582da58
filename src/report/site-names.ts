/**
 * Site names as an analyst reads them. The warehouse keeps the upstream's values
 * (`Google_new.local`, docs/warehouse.md, "Rank history", rank_observations); the report
 * shows these.
 */
const KNOWN: Record<string, string> = {
  'Google_new.local': 'Google (new) local pack',
  'Google_new.organic': 'Google (new) organic',
  Google_new: 'Google (new)',
  'Google.local': 'Google local pack',
  'Google.organic': 'Google organic',
};

/** `Google_new.local` → "Google (new) local pack"; `Bing_maps` → "Bing maps"; others as they are. */
export function siteLabel(site: string): string {
  const known = KNOWN[site];
  if (known) return known;
  const [name = site, part] = site.split('.', 2);
  const base = name.replace(/_new$/, ' (new)').replace(/_/g, ' ');
  if (part === 'local') return `${base} local pack`;
  if (part === 'organic') return `${base} organic`;
  return part ? `${base} ${part}` : base;
}
