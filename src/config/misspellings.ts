/**
 * Variables that look like a misspelt setting (`DATABSE_URL`): a typo would otherwise
 * leave the default in force without a word (for DATABASE_URL, the embedded database).
 */
import { CONFIG_VARIABLES, type ConfigVariable } from './settings.ts';

export interface Misspelling {
  /** The variable set in the environment. */
  name: string;
  /** The setting it resembles. */
  meant: ConfigVariable;
}

/**
 * Edit distance with adjacent transpositions counted as one edit (`PROT` → `PORT`), the
 * commonest typo; small strings only (variable names).
 */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => d[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, at(i - 2, j - 2) + 1);
      }
      (d[i] as number[])[j] = best;
    }
  }
  return at(a.length, b.length);
}

/**
 * Names in `env` that are not settings but are within two edits of one (one edit for
 * short names, so `PORTS` is caught and `HOME` is not mistaken for anything).
 */
export function misspeltVariables(env: Record<string, string | undefined>): Misspelling[] {
  const known = new Set<string>(CONFIG_VARIABLES);
  const found: Misspelling[] = [];
  for (const name of Object.keys(env)) {
    if (known.has(name) || env[name] === undefined) continue;
    const upper = name.toUpperCase();
    let best: { meant: ConfigVariable; distance: number } | undefined;
    for (const candidate of CONFIG_VARIABLES) {
      const distance = upper === candidate ? 0.5 : editDistance(upper, candidate);
      if (!best || distance < best.distance) best = { meant: candidate, distance };
    }
    const allowed = (best?.meant.length ?? 0) <= 6 ? 1 : 2;
    if (best && best.distance <= allowed) found.push({ name, meant: best.meant });
  }
  return found;
}
