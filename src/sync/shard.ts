/**
 * Sharding a night's load over N workers: a business belongs to shard
 * `stableHash(businessId) mod N`. The hash must not change between releases or between
 * pods, or two shards would both (or neither) own a business, so it is sha256 of the
 * decimal id, first four bytes, big-endian.
 */
import { createHash } from 'node:crypto';

export interface Shard {
  index: number;
  count: number;
}

export function shardOf(businessId: number, count: number): number {
  const digest = createHash('sha256').update(String(businessId)).digest();
  return digest.readUInt32BE(0) % count;
}

export function inShard(shard: Shard | undefined, businessId: number): boolean {
  return (
    shard === undefined || shard.count === 1 || shardOf(businessId, shard.count) === shard.index
  );
}

/** Parse `I/N` (0-based I). Throws a sentence naming the rule. */
export function parseShard(text: string): Shard {
  const match = /^(\d+)\/(\d+)$/.exec(text.trim());
  if (!match) throw new Error(`--shard must look like I/N, such as 0/4 (got "${text}").`);
  const index = Number(match[1]);
  const count = Number(match[2]);
  if (count < 1 || index >= count) {
    throw new Error(`--shard ${text}: I must be from 0 to N-1 and N at least 1.`);
  }
  return { index, count };
}

export function formatShard(shard: Shard | undefined): string | undefined {
  return shard ? `${shard.index}/${shard.count}` : undefined;
}
