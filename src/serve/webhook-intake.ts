/**
 * `POST /webhooks`: signed deliveries from the upstream service.
 *
 * The route reads the body as raw bytes (its own content-type parser, any type, up to the
 * body limit) and verifies `X-Service-Signature` over those bytes before anything parses
 * them. Answers:
 *   401 missing or bad signature (nothing stored)    413 body over the limit
 *   400 signed, but not a JSON object                  503 the database cannot take it (retry)
 *   200 stored, or a duplicate of a stored delivery (`duplicate: true`)
 * An unknown event kind is stored and acknowledged. The signature and the secrets are
 * never logged.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Logger } from '../log.ts';
import type { Database } from '../warehouse/database.ts';
import {
  type BoostInput,
  recordWebhookEvent,
  type WebhookEventInput,
} from '../warehouse/webhook-events.ts';
import type { WebhookOutcome } from './metrics.ts';
import { SIGNATURE_HEADER, verifySignature } from './signature.ts';

export const BOOST_CREATED = 'social_post.boost_created';

/** A delivery must be stored within this time or the sender is told to retry (503). */
const STORE_TIMEOUT_MS = 10_000;

export interface WebhookIntakeOptions {
  db: Kysely<Database>;
  secrets: readonly string[];
  bodyLimitBytes: number;
  logger: Logger;
  onOutcome?: (outcome: WebhookOutcome) => void;
}

function text(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

function integer(value: unknown): number | null {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) ? n : null;
}

function time(value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? null : at;
}

/**
 * The field of `data` that identifies an event, per kind: the only kind the upstream
 * documents is `social_post.boost_created`, identified by its ad run (docs/upstream.md,
 * "Webhooks"). An id means something only within its kind: another event about the same
 * ad run (a boost ending, say) is a different event, not a duplicate.
 */
const IDENTITY_FIELDS: ReadonlyMap<string, string> = new Map([[BOOST_CREATED, 'ad_run_id']]);

/**
 * The identity of a delivery: `<event kind>:<id>` for a kind whose id field is known and
 * present (a redelivery of the same event, even re-serialised, is a duplicate), else
 * `sha256:<hex of the raw body>` (only byte-identical redeliveries are duplicates).
 */
export function eventKeyOf(event: string | null, id: string | null, raw: Buffer): string {
  if (event !== null && id !== null) return `${event}:${id}`;
  return `sha256:${createHash('sha256').update(raw).digest('hex')}`;
}

/**
 * The row for one verified delivery. Lenient on purpose: every field is optional in the
 * spec, so a field of an unexpected type is stored as null here and kept in `payload`.
 */
export function webhookEventFromDelivery(
  raw: Buffer,
  payload: Record<string, unknown>,
  receivedAt: Date,
): WebhookEventInput {
  const data =
    typeof payload['data'] === 'object' &&
    payload['data'] !== null &&
    !Array.isArray(payload['data'])
      ? (payload['data'] as Record<string, unknown>)
      : {};
  const event = text(payload['event']);
  const idField = event === null ? undefined : IDENTITY_FIELDS.get(event);
  const id = idField === undefined ? null : text(data[idField])?.trim() || null;
  const eventKey = eventKeyOf(event, id, raw);
  const boost: BoostInput | null =
    event === BOOST_CREATED && id
      ? {
          adRunId: id,
          postId: text(data['post_id']),
          socialProfileId: text(data['social_profile_id']),
          platform: text(data['platform']),
          boostState: text(data['boost_state']),
          isBoost: typeof data['is_boost'] === 'boolean' ? data['is_boost'] : null,
        }
      : null;
  return {
    eventKey,
    event,
    accountId: integer(payload['account_id']),
    locationId: text(payload['location_id']),
    emittedAt: time(payload['timestamp']),
    receivedAt,
    payload,
    boost,
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the database did not answer in ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Registers `POST /webhooks` in its own scope (its body parser applies to it alone). */
export async function registerWebhookIntake(
  app: FastifyInstance,
  options: WebhookIntakeOptions,
): Promise<void> {
  const log = options.logger.child({ component: 'webhooks' });
  const count = (outcome: WebhookOutcome) => options.onOutcome?.(outcome);

  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: options.bodyLimitBytes },
      (_request, body, done) => done(null, body),
    );
    scope.setErrorHandler(
      (error: Error & { statusCode?: number; code?: string }, _request, reply) => {
        if (error.statusCode === 413 || error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
          count('too_large');
          log.warn({ limit: options.bodyLimitBytes }, 'webhook refused: body over the limit');
          return reply
            .code(413)
            .send({ error: `body larger than ${options.bodyLimitBytes} bytes` });
        }
        const status = error.statusCode && error.statusCode < 500 ? error.statusCode : 500;
        if (status >= 500) log.error({ err: error }, 'webhook intake failed');
        return reply.code(status).send({ error: status >= 500 ? 'internal error' : error.message });
      },
    );

    scope.post('/webhooks', async (request, reply) => {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      if (!verifySignature(raw, request.headers[SIGNATURE_HEADER], options.secrets)) {
        count('unauthorized');
        log.warn(
          { signed: request.headers[SIGNATURE_HEADER] !== undefined, bytes: raw.length },
          'webhook refused: missing or invalid signature',
        );
        return reply.code(401).send({ error: 'missing or invalid X-Service-Signature' });
      }
      let payload: unknown;
      try {
        payload = JSON.parse(raw.toString('utf8'));
      } catch {
        payload = undefined;
      }
      if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
        count('bad_json');
        log.warn({ bytes: raw.length }, 'webhook refused: signed, but not a JSON object');
        return reply.code(400).send({ error: 'the body is not a JSON object' });
      }
      const event = webhookEventFromDelivery(raw, payload as Record<string, unknown>, new Date());
      let stored: boolean;
      try {
        ({ stored } = await withTimeout(recordWebhookEvent(options.db, event), STORE_TIMEOUT_MS));
      } catch (error) {
        count('unavailable');
        log.error(
          { err: error, eventKey: event.eventKey, event: event.event },
          'webhook not stored: the database cannot take it; the sender should retry',
        );
        return reply
          .code(503)
          .header('retry-after', '30')
          .send({ error: 'the event could not be stored; retry later' });
      }
      count(stored ? 'accepted' : 'duplicate');
      log.info(
        { eventKey: event.eventKey, event: event.event, duplicate: !stored },
        stored ? 'webhook event stored' : 'webhook event already stored (duplicate)',
      );
      if (stored && event.event !== BOOST_CREATED) {
        log.info({ event: event.event }, 'webhook event of an unknown kind stored as it came');
      }
      return reply
        .code(200)
        .send({ received: true, duplicate: !stored, event_key: event.eventKey });
    });
  });
}
