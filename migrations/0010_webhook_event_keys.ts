/**
 * Webhook identity is the event kind and its id. Until now a delivery with a
 * `data.ad_run_id` was keyed by that id alone, whatever its kind, so a second kind of
 * event about the same ad run was taken for a duplicate and dropped. New keys are
 * `<event>:<id>` (`social_post.boost_created:<ad_run_id>`); hash keys (`sha256:…`) stay.
 *
 * Stored bare keys are rewritten to the new form, so that a redelivery of an event stored
 * before this migration is still recognised as a duplicate. A bare key whose row has no
 * `event` is left as it is: no new delivery gets a bare key, so it cannot collide.
 * `social_post_boosts.event_key` follows through `ON UPDATE CASCADE`.
 *
 * Never edit this file once it has landed: add a later migration instead.
 */
import { type Kysely, sql } from 'kysely';

const FK = 'social_post_boosts_event_key_fkey';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table social_post_boosts
      drop constraint ${sql.raw(FK)},
      add constraint ${sql.raw(FK)} foreign key (event_key)
        references webhook_events (event_key) on delete cascade on update cascade`.execute(db);
  await sql`
    update webhook_events
       set event_key = event || ':' || event_key
     where event is not null
       and left(event_key, 7) <> 'sha256:'
       and left(event_key, length(event) + 1) <> event || ':'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    update webhook_events
       set event_key = substr(event_key, length(event) + 2)
     where event is not null
       and left(event_key, length(event) + 1) = event || ':'`.execute(db);
  await sql`
    alter table social_post_boosts
      drop constraint ${sql.raw(FK)},
      add constraint ${sql.raw(FK)} foreign key (event_key)
        references webhook_events (event_key) on delete cascade`.execute(db);
}
