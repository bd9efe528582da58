/**
 * What an alert is, to the kinds that raise it and the messages that show it: a new alert
 * (`NewAlert`, which the outbox appends: outbox-rows.ts) and one alert as claimed for
 * delivery (`AlertForDelivery`, outbox.ts). The kinds (kinds/) import these from here,
 * not from the outbox.
 */
import type { AlertRuleKind } from '../config/alert-rules.ts';
import type { JsonValue } from '../warehouse/database.ts';

/** An alert to raise. `details` holds what changed, for messages (ranks, a rating, a run). */
export interface NewAlert {
  kind: AlertRuleKind;
  dedupeKey: string;
  accountName: string | null;
  businessId: number | null;
  listingId?: number | null;
  siteName?: string | null;
  keyword?: string | null;
  reviewId?: string | null;
  requestId?: string | null;
  previousStatus: string | null;
  status: string;
  details?: Record<string, JsonValue>;
  detectedAt: Date;
  runId: string | null;
}

/** One alert with what a message needs. */
export interface AlertForDelivery {
  alertId: number;
  kind: string;
  dedupeKey: string;
  accountName: string | null;
  businessId: number | null;
  businessName: string | null;
  listingId: number | null;
  siteName: string | null;
  keyword: string | null;
  previousStatus: string | null;
  status: string;
  details: Record<string, JsonValue>;
  detectedAt: Date;
  runId: string | null;
  attempts: number;
  deliveredSinks: string[];
  /** Sinks that will not get it: it was raised before they were configured (ALERT_BACKLOG=skip). */
  skippedSinks: string[];
  /** The listing as stored now; null when the alert names none or its row is gone. */
  listing: {
    name: string | null;
    nameValid: boolean | null;
    phone: string | null;
    phoneValid: boolean | null;
    address: string | null;
    addressValid: boolean | null;
    liveLink: string | null;
  } | null;
  /** For `review_response_failed`: the request and its review as stored now. */
  responseRequest: {
    requestId: string;
    reviewId: string;
    content: string;
    submittedAt: Date;
    reviewAuthor: string | null;
    reviewPermalink: string | null;
  } | null;
  /** For `low_rating_review`: the review as stored now. */
  review: {
    reviewId: string;
    rating: number | null;
    authorName: string | null;
    content: string | null;
    permalink: string | null;
  } | null;
}
