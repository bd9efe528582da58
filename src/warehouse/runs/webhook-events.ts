/**
 * `webhook_events` and `social_post_boosts`: every verified delivery, stored once (the
 * event key is its identity), and the typed projection of `social_post.boost_created`.
 * The receiver verifies the signature before calling this; the payload still passes
 * through `redactSecrets` so no secret lands in the table.
 */
import { redactSecrets } from '../../log.ts';
import type { Db, Json, Timestamp, TimestampWithDefault } from '../database.ts';

export interface BoostInput {
  adRunId: string;
  postId: string | null;
  socialProfileId: string | null;
  platform: string | null;
  boostState: string | null;
  isBoost: boolean | null;
}

export interface WebhookEventInput {
  /**
   * The delivery's identity: `<event kind>:<id>` (a boost: `social_post.boost_created:<ad_run_id>`),
   * else `sha256:<hex of the raw body>`; see `eventKeyOf` in src/serve/webhook-intake.ts.
   */
  eventKey: string;
  event: string | null;
  accountId: number | null;
  locationId: string | null;
  emittedAt: Date | null;
  receivedAt: Date;
  payload: unknown;
  /** The typed projection, for `social_post.boost_created`. */
  boost?: BoostInput | null;
}

/** Stores the delivery (and its boost) once; `stored` is false for a duplicate delivery. */
export async function recordWebhookEvent(
  db: Db,
  input: WebhookEventInput,
): Promise<{ stored: boolean }> {
  const run = async (trx: Db) => {
    const inserted = await trx
      .insertInto('webhook_events')
      .values({
        event_key: input.eventKey,
        event: input.event,
        account_id: input.accountId,
        location_id: input.locationId,
        emitted_at: input.emittedAt,
        received_at: input.receivedAt,
        payload: JSON.stringify(redactSecrets(input.payload ?? null)),
      })
      .onConflict((oc) => oc.column('event_key').doNothing())
      .executeTakeFirst();
    const stored = Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0;
    if (stored && input.boost) {
      await trx
        .insertInto('social_post_boosts')
        .values({
          ad_run_id: input.boost.adRunId,
          event_key: input.eventKey,
          account_id: input.accountId,
          location_id: input.locationId,
          post_id: input.boost.postId,
          social_profile_id: input.boost.socialProfileId,
          platform: input.boost.platform,
          boost_state: input.boost.boostState,
          is_boost: input.boost.isBoost,
          emitted_at: input.emittedAt,
          received_at: input.receivedAt,
        })
        .onConflict((oc) => oc.column('ad_run_id').doNothing())
        .execute();
    }
    return { stored };
  };
  return db.isTransaction ? run(db) : db.transaction().execute(run);
}

export interface WebhookEventsTable {
  event_key: string;
  event: string | null;
  account_id: number | null;
  /** As delivered: a numeric string for location-scoped events, null for brand-scoped. */
  location_id: string | null;
  emitted_at: Timestamp | null;
  received_at: TimestampWithDefault;
  payload: Json;
}

export interface SocialPostBoostsTable {
  ad_run_id: string;
  event_key: string;
  account_id: number | null;
  location_id: string | null;
  post_id: string | null;
  social_profile_id: string | null;
  platform: string | null;
  boost_state: string | null;
  is_boost: boolean | null;
  emitted_at: Timestamp | null;
  received_at: TimestampWithDefault;
}

declare module '../database.ts' {
  interface Database {
    webhook_events: WebhookEventsTable;
    social_post_boosts: SocialPostBoostsTable;
  }
}
