/**
 * Counts as a person writes them: "1 account", "2 accounts", "1 business", "1,205 reviews".
 * Every count the report prints goes through here, so no "1 accounts" or "(1 days)".
 */

const number = new Intl.NumberFormat('en-US');

/** The plural of a regular English noun: business → businesses, day → days, query → queries. */
export function pluralOf(singular: string): string {
  if (/(s|x|z|ch|sh)$/.test(singular)) return `${singular}es`;
  if (/[^aeiou]y$/.test(singular)) return `${singular.slice(0, -1)}ies`;
  return `${singular}s`;
}

/** The noun for `n` things, without the number: `noun(1, 'day')` is "day". */
export function noun(n: number, singular: string, plural = pluralOf(singular)): string {
  return n === 1 ? singular : plural;
}

/** `n` and its noun, the number grouped: `counted(1205, 'review')` is "1,205 reviews". */
export function counted(n: number, singular: string, plural = pluralOf(singular)): string {
  return `${number.format(n)} ${noun(n, singular, plural)}`;
}
