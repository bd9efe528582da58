/**
 * Webhook deliveries of `social_post.boost_created` events, signed as docs/upstream.md (Webhooks) says:
 * `X-Service-Signature: sha256=<HMAC-SHA256(secret, raw body)>`, lowercase hex by default
 * or base64 on request. Each delivery is retried on a non-2xx answer or a connection
 * error, with a short doubling backoff.
 */
import { createHmac } from 'node:crypto';
import { createRng, hash32 } from './random.ts';
import { STREAM } from './world.ts';

export type SignatureEncoding = 'hex' | 'base64';

/** The `X-Service-Signature` header value for a raw body. */
export function signWebhookBody(
  secret: string,
  body: string | Buffer,
  encoding: SignatureEncoding = 'hex',
): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest(encoding)}`;
}

export interface EmitRequest {
  url: string;
  count: number;
  secret: string;
  encoding: SignatureEncoding;
  repeat: number;
  /** The emitting account's name (`account-2`); the first account when absent. */
  account?: string;
}

export interface DeliveryReport {
  adRunId: string;
  /** 1-based: the same event is sent `repeat` times. */
  copy: number;
  attempts: number;
  /** The status of each attempt; 0 for a connection error. */
  statuses: number[];
  delivered: boolean;
  error?: string;
}

/** Attempts per delivery, and the first retry delay (doubled each time). */
const MAX_ATTEMPTS = 4;
const FIRST_RETRY_MS = 50;
const ATTEMPT_TIMEOUT_MS = 5_000;

export class EmitRequestError extends Error {}

/** Check and default the body of `POST /__sandbox/webhooks/emit`. */
export function parseEmitRequest(body: unknown): EmitRequest {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const url = b['url'];
  if (typeof url !== 'string' || !/^https?:\/\//.test(url)) {
    throw new EmitRequestError('url must be an http:// or https:// URL.');
  }
  const secret = b['secret'];
  if (typeof secret !== 'string' || secret === '') {
    throw new EmitRequestError('secret must be a non-empty string.');
  }
  const count = b['count'] ?? 1;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 10_000) {
    throw new EmitRequestError('count must be a whole number from 1 to 10000.');
  }
  const repeat = b['repeat'] ?? 1;
  if (typeof repeat !== 'number' || !Number.isInteger(repeat) || repeat < 1 || repeat > 10) {
    throw new EmitRequestError('repeat must be a whole number from 1 to 10.');
  }
  const encoding = b['encoding'] ?? 'hex';
  if (encoding !== 'hex' && encoding !== 'base64') {
    throw new EmitRequestError('encoding must be "hex" or "base64".');
  }
  const account = b['account'];
  if (account !== undefined && (typeof account !== 'string' || account === '')) {
    throw new EmitRequestError('account must be an account name, such as "account-1".');
  }
  return { url, secret, count, repeat, encoding, ...(account ? { account } : {}) };
}

/** The `n`-th event the sandbox emits: distinct per n, deterministic per seed. */
export function boostEvent(
  seed: number,
  n: number,
  accountId: number,
  timestamp: string,
): Record<string, unknown> {
  const rng = createRng(hash32(seed, STREAM.webhook, n));
  return {
    event: 'social_post.boost_created',
    timestamp,
    account_id: accountId,
    // Brand-scoped: no location.
    location_id: null,
    data: {
      ad_run_id: rng.uuid(),
      is_boost: true,
      boost_state: 'created',
      post_id: `${rng.int(100_000_000, 999_999_999)}_${rng.int(1_000_000, 9_999_999)}`,
      social_profile_id: String(rng.int(10_000, 99_999)),
      platform: rng.pick(['facebook', 'facebook', 'instagram']),
    },
  };
}

async function deliverOnce(url: string, body: string, signature: string): Promise<number> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-signature': signature },
    body,
    signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
  });
  await response.arrayBuffer();
  return response.status;
}

/** Deliver one raw body with retries, pausing between them on `sleep` (the sandbox's clock). */
export async function deliver(
  url: string,
  body: string,
  signature: string,
  sleep: (ms: number) => Promise<void>,
): Promise<{ attempts: number; statuses: number[]; delivered: boolean; error?: string }> {
  const statuses: number[] = [];
  let error: string | undefined;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    try {
      const status = await deliverOnce(url, body, signature);
      statuses.push(status);
      if (status >= 200 && status < 300) return { attempts: attempt, statuses, delivered: true };
      error = `HTTP ${status}`;
    } catch (cause) {
      statuses.push(0);
      error = cause instanceof Error ? cause.message : String(cause);
    }
    if (attempt < MAX_ATTEMPTS) {
      await sleep(FIRST_RETRY_MS * 2 ** (attempt - 1));
    }
  }
  return { attempts: MAX_ATTEMPTS, statuses, delivered: false, ...(error ? { error } : {}) };
}
