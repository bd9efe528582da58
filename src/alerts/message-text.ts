/**
 * The pieces every alert's text is made of: the business's label, the directory's wrong
 * fields, Slack escaping, one-line cuts, a detail read from `alerts.details`. Each kind's
 * own words are in its entry (src/alerts/kinds/index.ts); src/alerts/messages.ts puts
 * them together (docs/alerts.md, "Slack" and "Generic JSON").
 */
import type { JsonValue } from '../warehouse/database.ts';
import type { AlertForDelivery } from './alert.ts';

export interface SlackMessage {
  text: string;
}

/** Which of name, phone and address the directory has wrong (a `false` _valid flag). */
export function wrongFields(alert: AlertForDelivery): string[] {
  const listing = alert.listing;
  if (!listing) return [];
  const wrong: string[] = [];
  if (listing.nameValid === false) wrong.push('name');
  if (listing.phoneValid === false) wrong.push('phone');
  if (listing.addressValid === false) wrong.push('address');
  return wrong;
}

export function businessLabel(alert: AlertForDelivery): string {
  if (alert.businessId === null) return alert.accountName ? `account ${alert.accountName}` : '';
  return alert.businessName ?? `business ${alert.businessId}`;
}

/** Slack's mrkdwn needs `&`, `<` and `>` escaped in text it should not read as markup. */
export function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** One line, at most `max` characters. */
export function oneLine(text: string | null | undefined, max: number): string {
  if (!text) return '';
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export function detail(alert: AlertForDelivery, key: string): JsonValue | undefined {
  return alert.details[key];
}

/**
 * A Slack message's last line: where and when the alert was detected (`Business 7, account
 * acme, detected 2026-…`), without the business or the account when the alert has none.
 */
export function detectedLine(alert: AlertForDelivery): string {
  return [
    alert.businessId !== null ? `Business ${alert.businessId}` : null,
    alert.accountName ? `account ${slackEscape(alert.accountName)}` : null,
    `detected ${alert.detectedAt.toISOString()}`,
  ]
    .filter(Boolean)
    .join(', ');
}

/** Only http(s) links are offered to a reader. */
export function isWebLink(link: string | null | undefined): link is string {
  return !!link && /^https?:\/\//i.test(link);
}
