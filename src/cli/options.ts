/**
 * The option parsers of every command: each turns a command-line string into a value or
 * throws commander's `InvalidArgumentError`, which prints the sentence and exits 2.
 */
import { InvalidArgumentError } from 'commander';
import { parseShard, type Shard } from '../sync/shard.ts';

/** A whole number from `min` to `max`. */
export function integerOption(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
      throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}.`);
    }
    return parsed;
  };
}

/** A finite number of at least `min` (and at most `max`, if given). */
export function numberOption(name: string, min: number, max = Number.POSITIVE_INFINITY) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < min || parsed > max) {
      throw new InvalidArgumentError(
        max === Number.POSITIVE_INFINITY
          ? `${name} must be a number of at least ${min}.`
          : `${name} must be a number from ${min} to ${max}.`,
      );
    }
    return parsed;
  };
}

/** A calendar date, `YYYY-MM-DD`. */
export function dateOption(name: string) {
  return (value: string): string => {
    // Date.parse rolls 2026-02-30 over to March: only a date that reads back the same is one.
    const at = /^\d{4}-\d{2}-\d{2}$/.test(value) ? new Date(`${value}T00:00:00Z`) : null;
    if (!at || Number.isNaN(at.getTime()) || at.toISOString().slice(0, 10) !== value) {
      throw new InvalidArgumentError(`${name} must be a calendar date as YYYY-MM-DD.`);
    }
    return value;
  };
}

/** `I/N`: shard I of N, 0-based. */
export function shardOption(value: string): Shard {
  try {
    return parseShard(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}
