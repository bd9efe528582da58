/**
 * Volume drops (docs/warehouse.md, "How removals work"). A successful read that would mark
 * gone most of a business's live rows of a stream (listings, reviews with their responses,
 * keywords) is more often an upstream that answered `success: true` with too little than
 * a business that lost its listings overnight. Such a read is *held*: its upserts apply,
 * its removals do not, and `businesses.removals_held` records the drop. The next run that
 * reads the stream decides: the same drop again *confirms* it and the removals apply; a
 * read that is not a drop clears the hold (the rows came back, nothing was lost).
 *
 * The warehouse decides what is held from a `RemovalLimit` handed in (the sync takes it
 * from the `volume_drop` alert rule); the held drops are reported as changes, and the
 * alert rules raise `volume_drop` for them.
 *
 * An account's business list is guarded the same way, at the account's level: a list that
 * would archive a volume drop of the account's live businesses, or any of them when it
 * answers nothing at all, archives nothing on first sight; `accounts.removals_held` records
 * the hold under the list's key (`businessListKey`), and the next run that reads the same
 * drop confirms it and archives.
 */
import { sql } from 'kysely';
import { type RemovalStream, removalPolicy } from '../../streams/index.ts';
import type { Db, JsonValue } from '../database.ts';

/**
 * The streams whose reads mark rows gone: those whose descriptor's removal policy is
 * `held-on-volume-drop` (src/streams/index.ts). Responses go with their reviews.
 */
export type { RemovalStream };

/** When a read is a volume drop. */
export interface RemovalLimit {
  /** Held when the read would mark gone more than this share (0 to 1) of the live rows… */
  share: number;
  /** …and at least this many rows. */
  minRows: number;
}

/** One held drop, as `businesses.removals_held` stores it under its stream's name. */
export interface HeldRemoval {
  /** The run that held it; a later run confirms or clears it. */
  run_id: string;
  held_at: string;
  /** The business's live rows of the stream when the drop was held. */
  stored: number;
  /** The records the read answered. */
  answered: number;
  /** The live rows the read no longer listed: what was not marked gone. */
  removing: number;
}

export type HeldRemovals = Partial<Record<RemovalStream, HeldRemoval>>;

/**
 * Asked by a writer once per stream, with the stream's live stored rows and how many the
 * read no longer lists (refused records excluded); true: mark them gone now; false: hold.
 */
export type RemovalCheck = (stream: RemovalStream, live: number, gone: number) => boolean;

/** A drop held by this write, reported as a change. */
export interface RemovalsHeld {
  stream: RemovalStream;
  stored: number;
  answered: number;
  removing: number;
}

/** Whether removing `gone` of `live` rows is a volume drop under `limit`. */
export function isVolumeDrop(limit: RemovalLimit, live: number, gone: number): boolean {
  return gone >= limit.minRows && gone > live * limit.share;
}

function heldFrom(value: JsonValue | null | undefined): HeldRemovals {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as unknown as HeldRemovals)
    : {};
}

/**
 * The key of an account's business-list hold: `businesses` for a whole run, or
 * `businesses:I/N` for a shard. Shards of one night are separate runs that each judge
 * their own part of the list: under one key, the second would take the first's hold as an
 * earlier run's and confirm it on first sight.
 */
export function businessListKey(shard: string | undefined): string {
  return shard === undefined ? 'businesses' : `businesses:${shard}`;
}

/** A business list this run held, reported for the `volume_drop` rule. */
export interface BusinessListHeld {
  accountName: string;
  /** `businessListKey`: the whole account's list, or a shard's part of it. */
  key: string;
  /** The account's live businesses (of the shard) when the drop was held. */
  stored: number;
  /** The businesses the list answered (of the shard). */
  answered: number;
  /** The live businesses it no longer listed: what was not archived. */
  removing: number;
  runId: string;
  detectedAt: Date;
}

/**
 * Whether this run holds an account's business list (true) or lets its archiving apply
 * (false). A drop is what a stream's read would be (`isVolumeDrop`), or any archiving at
 * all by a list that answered nothing: an account whose businesses all close overnight is
 * rarer than an upstream that answers `success: true` with `[]`, however few it had. A
 * drop an earlier run held (`earlier`) is confirmed by this one; the same run holds still.
 */
export function holdsBusinessList(
  limit: RemovalLimit | undefined,
  earlier: HeldRemoval | undefined,
  list: { live: number; gone: number; answeredNothing: boolean },
  runId: string,
): boolean {
  if (limit === undefined) return false;
  const drop = (list.answeredNothing && list.gone > 0) || isVolumeDrop(limit, list.live, list.gone);
  return drop && (earlier === undefined || earlier.run_id === runId);
}

/** The hold on an account's business list under `key`, if there is one. */
export async function heldBusinessList(
  db: Db,
  accountName: string,
  key: string,
): Promise<HeldRemoval | undefined> {
  const row = await db
    .selectFrom('accounts')
    .select('removals_held')
    .where('name', '=', accountName)
    .executeTakeFirst();
  return (heldFrom(row?.removals_held) as Record<string, HeldRemoval | undefined>)[key];
}

/**
 * Records a business list held for the first time, under its key, in one statement that
 * leaves the other keys (another shard's holds) as they are.
 */
export async function recordBusinessListHold(db: Db, held: BusinessListHeld): Promise<void> {
  const entry: HeldRemoval = {
    run_id: held.runId,
    held_at: held.detectedAt.toISOString(),
    stored: held.stored,
    answered: held.answered,
    removing: held.removing,
  };
  await sql`update accounts
    set removals_held = coalesce(removals_held, '{}'::jsonb)
      || jsonb_build_object(${held.key}::text, ${JSON.stringify(entry)}::jsonb)
    where name = ${held.accountName}`.execute(db);
}

/** Clears the hold on an account's business list under `key` (null when none is left). */
export async function clearBusinessListHold(
  db: Db,
  accountName: string,
  key: string,
): Promise<void> {
  await sql`update accounts
    set removals_held = nullif(removals_held - ${key}::text, '{}'::jsonb)
    where name = ${accountName} and removals_held -> ${key}::text is not null`.execute(db);
}

/**
 * The removal decisions of one business write. `check` is handed to the writers; after
 * them, `finish` stores what is held now (one UPDATE of the locked business row, only when
 * that changed) and returns the drops this write held.
 */
export function removalDecisions(
  stored: JsonValue | null | undefined,
  limit: RemovalLimit | undefined,
  run: { runId: string; observedAt: Date },
) {
  const before = heldFrom(stored);
  const decided = new Map<RemovalStream, { live: number; gone: number; held: boolean }>();
  const check: RemovalCheck = (stream, live, gone) => {
    const drop =
      limit !== undefined &&
      removalPolicy(stream) === 'held-on-volume-drop' &&
      isVolumeDrop(limit, live, gone);
    const earlier = before[stream];
    // A drop an earlier run held is confirmed by this one; the same run holds it still.
    const held = drop && (earlier === undefined || earlier.run_id === run.runId);
    decided.set(stream, { live, gone, held });
    return !held;
  };

  /**
   * Writes the held drops of the business after this write: each stream read this time is
   * held or not as decided; a stream not read keeps what it had. `answered` gives each
   * read stream's record count.
   */
  const finish = async (
    db: Db,
    businessId: number,
    answered: Partial<Record<RemovalStream, number>>,
  ): Promise<RemovalsHeld[]> => {
    const after: HeldRemovals = { ...before };
    const held: RemovalsHeld[] = [];
    for (const [stream, decision] of decided) {
      if (!decision.held) {
        delete after[stream];
        continue;
      }
      const counts = {
        stored: decision.live,
        answered: answered[stream] ?? 0,
        removing: decision.gone,
      };
      held.push({ stream, ...counts });
      after[stream] = before[stream] ?? {
        run_id: run.runId,
        held_at: run.observedAt.toISOString(),
        ...counts,
      };
    }
    const text = Object.keys(after).length ? JSON.stringify(after) : null;
    const was = Object.keys(before).length ? JSON.stringify(before) : null;
    if (text !== was) {
      await sql`update businesses set removals_held = ${text}::jsonb
        where business_id = ${businessId}`.execute(db);
    }
    return held;
  };
  return { check, finish };
}
