/**
 * `review_response_failed`: a review response submitted through the command line
 * (operation 9) whose status read (operation 10) answers `Failed`. Raised (through
 * `raiseForChanges`) in the transaction that records the status; once per request.
 */

import type { Db } from '../../warehouse/database.ts';
import type { ResponseFailed } from '../../warehouse/write/changes.ts';
import {
  businessLabel,
  isWebLink,
  oneLine,
  type SlackMessage,
  slackEscape,
} from '../message-text.ts';
import type { AlertForDelivery } from '../outbox.ts';
import { raise } from '../outbox-rows.ts';
import type { AlertRules } from '../rules.ts';
import { type AlertKind, type AlertKindEntry, raisedFrom } from './kind.ts';

export const REVIEW_RESPONSE_FAILED = 'review_response_failed' satisfies AlertKind;

/** A failed review response: once per request (a request fails once). */
export function reviewResponseFailedKey(requestId: string): string {
  return `${REVIEW_RESPONSE_FAILED}:${requestId}`;
}

/** Returns true when the alert was raised now (false: the rule is off, or it exists). */
export async function raiseReviewResponseFailed(
  db: Db,
  rules: AlertRules,
  failed: ResponseFailed,
): Promise<boolean> {
  if (!rules.reviewResponseFailed.enabled) return false;
  const raised = await raise(db, [
    {
      kind: REVIEW_RESPONSE_FAILED,
      dedupeKey: reviewResponseFailedKey(failed.requestId),
      ...raisedFrom(failed),
      siteName: failed.siteName,
      requestId: failed.requestId,
      previousStatus: failed.previousStatus,
      status: 'Failed',
    },
  ]);
  return raised > 0;
}

/** The Slack text of a review response request that ended `Failed`. */
function slack(alert: AlertForDelivery): SlackMessage {
  const request = alert.responseRequest;
  const site = alert.siteName ? ` on *${slackEscape(alert.siteName)}*` : '';
  const author = request?.reviewAuthor ? ` by ${slackEscape(request.reviewAuthor)}` : '';
  const lines = [
    `:x: A response to a review${author}${site} for *${slackEscape(businessLabel(alert))}* *failed* to post` +
      (alert.previousStatus ? ` (was ${slackEscape(alert.previousStatus)})` : '') +
      '.',
  ];
  if (request) lines.push(`Response: "${slackEscape(oneLine(request.content, 200))}"`);
  const link = request?.reviewPermalink;
  if (isWebLink(link)) lines.push(`<${link}|View the review>`);
  lines.push(
    'The upstream will not accept another response to this review through the API; post it on the site itself.',
  );
  lines.push(
    `Request ${slackEscape(request?.requestId ?? alert.dedupeKey)}` +
      (request ? `, review ${request.reviewId}` : '') +
      `, business ${alert.businessId}` +
      (alert.accountName ? `, account ${slackEscape(alert.accountName)}` : '') +
      `, detected ${alert.detectedAt.toISOString()}`,
  );
  return { text: lines.join('\n') };
}

export const reviewResponseFailed: AlertKindEntry<typeof REVIEW_RESPONSE_FAILED> = {
  kind: REVIEW_RESPONSE_FAILED,
  label: ['failed review response', 'failed review responses'],
  severity: 3,
  icon: ':x:',
  summary: (alert) =>
    `response on ${alert.siteName ?? 'a site'}: ${alert.previousStatus ?? '?'} → Failed`,
  slack,
  webhook: (alert) => {
    const request = alert.responseRequest;
    return {
      review_response: {
        request_id: request?.requestId ?? null,
        review_id: request?.reviewId ?? null,
        site_name: alert.siteName,
        review_author: request?.reviewAuthor ?? null,
        review_permalink: request?.reviewPermalink ?? null,
        content: request?.content ?? null,
        submitted_at: request ? request.submittedAt.toISOString() : null,
        previous_status: alert.previousStatus,
        status: alert.status,
      },
    };
  },
  raise: {
    on: 'response_failed',
    raise: async (db, rules, changes) => {
      let raised = 0;
      for (const { type: _, ...failed } of changes) {
        if (await raiseReviewResponseFailed(db, rules, failed)) raised += 1;
      }
      return raised;
    },
  },
};
