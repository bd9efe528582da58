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
 */
import { sql } from 'kysely';
import type { Db, JsonValue } from './database.ts';

/** The streams whose reads mark rows gone. Responses go with their reviews. */
export type RemovalStream = 'listings' | 'reviews' | 'keywords';

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
    const drop = limit !== undefined && isVolumeDrop(limit, live, gone);
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
