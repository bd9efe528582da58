/**
 * Fault injection: which fault, if any, a request to `/api/v2` gets. Order of decision:
 * the scripted queue (deterministic, consumed by the next matching request), the
 * per-account rate limit, then the random rates (reset, hang, 5xx). Added latency
 * applies to every answer. Draws come from a PRNG seeded from the sandbox seed, so a run
 * with the same requests in the same order meets the same faults.
 */
import type { AnswerFault } from './answer-faults.ts';
import { createRng, hash32, type Rng } from './random.ts';

export interface FaultSettings {
  /** Added latency per request, plus up to `jitterMs` more. */
  latencyMs: number;
  jitterMs: number;
  /** Fraction answered 500 (JSON body) or 502/503 (HTML or plain, non-JSON). */
  errorRate: number;
  /** Per account; above it answer 429 with Retry-After. Null: no limit. */
  rateLimitPerSecond: number | null;
  /** Retry-After on 429s, in seconds. */
  retryAfterSeconds: number;
  /** Fraction of requests whose socket is destroyed without a response. */
  resetRate: number;
  /** Fraction of requests that never answer. */
  hangRate: number;
  /** Extra malformed records injected into list payloads, as a fraction of their size. */
  malformedRate: number;
  /** Every upstream error body (auth, not found, validation) answered with HTTP 200. */
  errorsWith200: boolean;
  /** Consumed in order by the next requests whose operation matches (or any, without one). */
  script: ScriptedFault[];
}

export type ScriptedFaultKind =
  | '500'
  | '502'
  | '503'
  | '429'
  | 'reset'
  | 'hang'
  | 'non-json'
  | 'drip'
  | 'oversized'
  | 'duplicate'
  | 'empty';

export type ScriptedFault = {
  kind: ScriptedFaultKind;
  operation?: string;
  /** `429`: the Retry-After sent, in seconds (any size: `86400` is a day's pause). */
  retryAfterSeconds?: number;
  /** `oversized`: records in the answer. */
  count?: number;
  /** `oversized` on get_rankings: sites under each keyword. */
  sitesPerKeyword?: number;
  /** `duplicate`: `identical` (default) or `disagreeing` copies of the first record. */
  copies?: 'identical' | 'disagreeing';
  /** `drip`: the body is padded with spaces to this many bytes (never cut). */
  dripBytes?: number;
  /** `drip`: bytes sent per tick (default 1). */
  dripChunkBytes?: number;
  /** `drip`: milliseconds between ticks (default 1000: a byte a second). */
  dripIntervalMs?: number;
};

export const DEFAULT_FAULTS: FaultSettings = {
  latencyMs: 0,
  jitterMs: 0,
  errorRate: 0,
  rateLimitPerSecond: null,
  retryAfterSeconds: 1,
  resetRate: 0,
  hangRate: 0,
  malformedRate: 0,
  errorsWith200: false,
  script: [],
};

const KINDS: ReadonlySet<string> = new Set([
  '500',
  '502',
  '503',
  '429',
  'reset',
  'hang',
  'non-json',
  'drip',
  'oversized',
  'duplicate',
  'empty',
]);

export class FaultSettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FaultSettingsError';
  }
}

function fraction(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new FaultSettingsError(`${name} must be a number from 0 to 1.`);
  }
  return value;
}

function nonNegative(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new FaultSettingsError(`${name} must be a number of at least 0.`);
  }
  return value;
}

function wholeNumber(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new FaultSettingsError(`${name} must be a whole number of at least 1.`);
  }
  return value;
}

function parseScript(value: unknown): ScriptedFault[] {
  if (!Array.isArray(value)) throw new FaultSettingsError('script must be an array.');
  return value.map((entry, index) => {
    const e = entry as Record<string, unknown> | null;
    if (
      typeof e !== 'object' ||
      e === null ||
      typeof e['kind'] !== 'string' ||
      !KINDS.has(e['kind'])
    ) {
      throw new FaultSettingsError(
        `script[${index}].kind must be one of ${[...KINDS].join(', ')}.`,
      );
    }
    const fault: ScriptedFault = { kind: e['kind'] as ScriptedFaultKind };
    if (e['operation'] !== undefined) {
      if (typeof e['operation'] !== 'string') {
        throw new FaultSettingsError(`script[${index}].operation must be an operation name.`);
      }
      fault.operation = e['operation'];
    }
    if (e['retryAfterSeconds'] !== undefined) {
      fault.retryAfterSeconds = nonNegative(
        `script[${index}].retryAfterSeconds`,
        e['retryAfterSeconds'],
      );
    }
    for (const key of ['count', 'sitesPerKeyword', 'dripBytes', 'dripChunkBytes'] as const) {
      if (e[key] !== undefined) fault[key] = wholeNumber(`script[${index}].${key}`, e[key]);
    }
    if (e['dripIntervalMs'] !== undefined) {
      fault.dripIntervalMs = nonNegative(`script[${index}].dripIntervalMs`, e['dripIntervalMs']);
    }
    if (e['copies'] !== undefined) {
      if (e['copies'] !== 'identical' && e['copies'] !== 'disagreeing') {
        throw new FaultSettingsError(`script[${index}].copies must be identical or disagreeing.`);
      }
      fault.copies = e['copies'];
    }
    return fault;
  });
}

/** The keys `PUT /__sandbox/faults` takes, as listed in docs/upstream.md. */
export const FAULT_SETTING_KEYS: readonly (keyof FaultSettings)[] = Object.keys(
  DEFAULT_FAULTS,
) as (keyof FaultSettings)[];

/** Friendlier names for the two latency settings, matching the CLI's `--latency`/`--jitter`. */
const ALIASES: Readonly<Record<string, keyof FaultSettings>> = {
  latency: 'latencyMs',
  jitter: 'jitterMs',
};

/** `current` with a partial patch applied; throws `FaultSettingsError` on a bad value. */
export function mergeFaults(current: FaultSettings, patch: unknown): FaultSettings {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
    throw new FaultSettingsError('The fault settings must be a JSON object.');
  }
  const p = patch as Record<string, unknown>;
  const next: FaultSettings = { ...current, script: [...current.script] };
  for (const given of Object.keys(p)) {
    const value = p[given];
    const key = ALIASES[given] ?? given;
    if (ALIASES[given] && Object.hasOwn(p, key)) {
      throw new FaultSettingsError(`Give ${key} or ${given}, not both.`);
    }
    switch (key) {
      case 'latencyMs':
      case 'jitterMs':
      case 'retryAfterSeconds':
        next[key] = nonNegative(key, value);
        break;
      case 'errorRate':
      case 'resetRate':
      case 'hangRate':
      case 'malformedRate':
        next[key] = fraction(key, value);
        break;
      case 'rateLimitPerSecond':
        next.rateLimitPerSecond = value === null || value === 0 ? null : nonNegative(key, value);
        break;
      case 'errorsWith200':
        if (typeof value !== 'boolean')
          throw new FaultSettingsError('errorsWith200 must be true or false.');
        next.errorsWith200 = value;
        break;
      case 'script':
        next.script = parseScript(value);
        break;
      default:
        throw new FaultSettingsError(
          `Unknown fault setting "${given}"; the settings are ${FAULT_SETTING_KEYS.join(', ')} (latency and jitter are accepted for latencyMs and jitterMs).`,
        );
    }
  }
  return next;
}

export type FaultDecision =
  | { kind: 'none' }
  | { kind: '500' | '502' | '503' | 'reset' | 'hang' | 'non-json' }
  | { kind: '429'; retryAfterSeconds: number }
  /** The real answer, reshaped (answer-faults.ts). */
  | { kind: 'answer'; fault: AnswerFault }
  /** The real answer, its body sent `chunkBytes` every `intervalMs` after the headers. */
  | { kind: 'drip'; padToBytes: number; chunkBytes: number; intervalMs: number };

interface Bucket {
  tokens: number;
  updatedAt: number;
}

export interface FaultState {
  settings: FaultSettings;
  rng: Rng;
  buckets: Map<string, Bucket>;
}

export function createFaultState(seed: number, settings: FaultSettings): FaultState {
  return { settings, rng: createRng(hash32(seed, 0xfa17)), buckets: new Map() };
}

/** A token bucket per account: `limit` tokens a second, bursts of at most `limit`. */
function overRateLimit(state: FaultState, accountKey: string, limit: number, now: number): boolean {
  const capacity = Math.max(1, limit);
  const bucket = state.buckets.get(accountKey) ?? { tokens: capacity, updatedAt: now };
  bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.updatedAt) / 1000) * limit);
  bucket.updatedAt = now;
  state.buckets.set(accountKey, bucket);
  if (bucket.tokens < 1) return true;
  bucket.tokens -= 1;
  return false;
}

export function decideFault(
  state: FaultState,
  operation: string,
  accountKey: string,
  now: number,
): FaultDecision {
  const s = state.settings;
  const index = s.script.findIndex((f) => f.operation === undefined || f.operation === operation);
  if (index >= 0) {
    const [fault] = s.script.splice(index, 1);
    const f = fault as ScriptedFault;
    switch (f.kind) {
      case '429':
        return { kind: '429', retryAfterSeconds: f.retryAfterSeconds ?? s.retryAfterSeconds };
      case 'drip':
        return {
          kind: 'drip',
          padToBytes: f.dripBytes ?? 0,
          chunkBytes: f.dripChunkBytes ?? 1,
          intervalMs: f.dripIntervalMs ?? 1000,
        };
      case 'oversized':
      case 'duplicate':
      case 'empty': {
        const answer: AnswerFault = { kind: f.kind };
        if (f.count !== undefined) answer.count = f.count;
        if (f.sitesPerKeyword !== undefined) answer.sitesPerKeyword = f.sitesPerKeyword;
        if (f.copies !== undefined) answer.copies = f.copies;
        return { kind: 'answer', fault: answer };
      }
      default:
        return { kind: f.kind };
    }
  }
  if (
    s.rateLimitPerSecond !== null &&
    overRateLimit(state, accountKey, s.rateLimitPerSecond, now)
  ) {
    return { kind: '429', retryAfterSeconds: s.retryAfterSeconds };
  }
  if (s.resetRate > 0 && state.rng.next() < s.resetRate) return { kind: 'reset' };
  if (s.hangRate > 0 && state.rng.next() < s.hangRate) return { kind: 'hang' };
  if (s.errorRate > 0 && state.rng.next() < s.errorRate) {
    return { kind: state.rng.pick(['500', '502', '503'] as const) };
  }
  return { kind: 'none' };
}

export function latencyFor(state: FaultState): number {
  const s = state.settings;
  if (s.latencyMs <= 0 && s.jitterMs <= 0) return 0;
  return s.latencyMs + (s.jitterMs > 0 ? state.rng.next() * s.jitterMs : 0);
}
