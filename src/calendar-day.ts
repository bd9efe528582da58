/**
 * UTC calendar days as `YYYY-MM-DD` text, the one arithmetic every rank day, report day
 * and demo day uses, so that they agree (docs/warehouse.md, "Rank history": a rank's day
 * is the run's UTC date). Imports nothing, so every folder may import it.
 */

const DAY_MS = 86_400_000;

/** The UTC calendar day of an instant, `YYYY-MM-DD`. */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** `day` moved by `days` (negative: earlier). */
export function addDays(day: string, days: number): string {
  return utcDay(new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS));
}

/** Whole days from `from` to `to` (negative when `to` is earlier). */
export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
}
