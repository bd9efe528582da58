/**
 * `POST /webhooks`: signed deliveries from the upstream service.
 *
 * The route reads the body as raw bytes (its own content-type parser, any type, up to the
 * body limit) and verifies `X-Service-Signature` over those bytes before anything parses
 * them. Answers:
 *   401 missing or bad signature (nothing stored)    413 body over the limit (below)
 *   400 signed, but not a JSON object                  503 the database cannot take it (retry)
 *   503 + Retry-After: 1, before the body is read: WEBHOOK_MAX_IN_FLIGHT deliveries are
 *       already being handled (overload is answered, never a reset connection; the
 *       unread body is drained by Node, so the connection stays usable)
 *   422 signed JSON the warehouse cannot store as sent: a NUL character or a lone surrogate
 *       in a string, nesting deeper than MAX_DEPTH, or a value the database refuses (a
 *       permanent answer: the same bytes would fail again, so the sender must not retry)
 *   200 stored, or a duplicate of a stored delivery (`duplicate: true`)
 * 413 is always an answer the sender reads: decided from Content-Length before `100
 * Continue` is sent (or before the body is read), else from the bytes counted (chunked),
 * and written so that closing never resets the connection under it (webhook-too-large.ts;
 * docs/serve.md, "Webhooks").
 * An unknown event kind is stored and acknowledged. The signature and the secrets are
 * never logged; a refused delivery is logged with its kind and a short, redacted excerpt
 * of its body, for diagnosis. 503 is kept for a database that is down or does not answer.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { type Logger, redactText } from '../log.ts';
import { keepOut, keptOutOfText } from '../raw/body.ts';
import type { Database } from '../warehouse/database.ts';
import {
  type BoostInput,
  recordWebhookEvent,
  type WebhookEventInput,
} from '../warehouse/runs/webhook-events.ts';
import { SIGNATURE_HEADER, verifySignature } from '../webhook-signature.ts';
import type { WebhookOutcome } from './metrics.ts';
import { answerAndLinger, refuseTooLargeBeforeContinue } from './webhook-too-large.ts';

export const BOOST_CREATED = 'social_post.boost_created';

/** A delivery must be stored within this time or the sender is told to retry (503). */
export const STORE_TIMEOUT_MS = 10_000;
/**
 * The deepest nesting accepted. The documented event is two levels deep; 64 leaves room
 * for kinds the upstream may add, and keeps every walk of the payload (redaction, jsonb
 * input, logging) far from a stack limit.
 */
const MAX_DEPTH = 64;
/** Characters of a refused body quoted in the log line. */
const EXCERPT_CHARS = 300;

export interface WebhookIntakeOptions {
  db: Kysely<Database>;
  secrets: readonly string[];
  bodyLimitBytes: number;
  /** WEBHOOK_MAX_IN_FLIGHT: deliveries handled at once; more are answered 503 at once. */
  maxInFlight: number;
  logger: Logger;
  onOutcome?: (outcome: WebhookOutcome) => void;
  /** Told the number of deliveries in flight each time it changes. */
  onInFlight?: (count: number) => void;
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
 * The payload is stored with e-mails and credentials kept out, in place, by the raw
 * zone's rule (`user_email`, `auth_token`, `site_username`, `site_password` at any depth:
 * src/raw/body.ts); the identity is taken before, from the bytes as sent.
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
  keepOut(payload);
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

/** Why a parsed payload cannot be stored as sent, and where: `data.post_id`. */
export interface UnstorableValue {
  path: string;
  rule: string;
}

/** Why PostgreSQL would refuse a string in jsonb or text, or null. */
function unstorableText(text: string): string | null {
  // jsonb and text cannot hold U+0000.
  if (text.includes('\u0000')) return 'contains a NUL character (\\u0000)';
  // Half of a UTF-16 pair is not Unicode; jsonb refuses its escape.
  if (!text.isWellFormed()) return 'contains a lone UTF-16 surrogate (not valid Unicode)';
  return null;
}

/**
 * The first value PostgreSQL cannot store in `jsonb`/`text` as sent, or null: a string or
 * key with a NUL character or a lone surrogate, or nesting deeper than MAX_DEPTH. Walks the
 * payload with an explicit stack, so no depth can overflow the call stack.
 */
export function findUnstorableValue(payload: unknown): UnstorableValue | null {
  const stack: { value: unknown; path: string; depth: number }[] = [
    { value: payload, path: '', depth: 0 },
  ];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { value, path, depth } = item;
    const where = path || '(the body)';
    if (typeof value === 'string') {
      const rule = unstorableText(value);
      if (rule) return { path: where, rule };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_DEPTH)
      return { path: where, rule: `is nested deeper than ${MAX_DEPTH} levels` };
    if (Array.isArray(value)) {
      value.forEach((inner, index) => {
        stack.push({ value: inner, path: `${path}[${index}]`, depth: depth + 1 });
      });
      continue;
    }
    for (const [key, inner] of Object.entries(value)) {
      const childPath = `${path}${path ? '.' : ''}${describeKey(key)}`;
      const rule = unstorableText(key);
      if (rule) return { path: childPath, rule: `is a key that ${rule}` };
      stack.push({ value: inner, path: childPath, depth: depth + 1 });
    }
  }
  return null;
}

/** A key as shown in a path: NULs and lone surrogates escaped, cut short. */
function describeKey(key: string): string {
  const shown = JSON.stringify(key).slice(1, -1);
  return shown.length > 40 ? `${shown.slice(0, 39)}…` : shown;
}

/** A short text from the payload (the event kind), escaped and cut, for the log. */
function excerptText(text: string): string {
  return JSON.stringify(text.slice(0, 100)).slice(1, -1);
}

/**
 * The start of a refused body, for the log: e-mails and credentials kept out by the raw
 * zone's rule (on the whole body, so that a cut never splits a value out of its key's
 * reach), then cut to EXCERPT_CHARS, redacted, escaped.
 */
function excerpt(raw: Buffer): string {
  const text = keptOutOfText(raw.toString('utf8')).slice(0, EXCERPT_CHARS);
  // Redacted before escaping, while `"password":"…"` still reads as such; then
  // JSON.stringify escapes NULs and lone surrogates, so the log line stays valid UTF-8.
  return JSON.stringify(redactText(text)).slice(1, -1);
}

/**
 * Database errors that belong to the value, not the moment: SQLSTATE class 22 (data
 * exception: bad encoding, out of range) and class 54 (program limit: an id too long for
 * its key's index, 54000; jsonb nested too deep, 54001), and a JS RangeError (call stack)
 * while preparing the row. The same bytes would fail again, so the answer is 422, not 503.
 */
function isPermanentStoreError(error: unknown): boolean {
  if (error instanceof RangeError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('54'));
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the database did not answer in ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** What each step of a delivery answers to: the intake's options, its log and its count. */
interface Intake {
  options: WebhookIntakeOptions;
  log: Logger;
  count: (outcome: WebhookOutcome) => void;
}

/** Registers `POST /webhooks` in its own scope (its body parser applies to it alone). */
export async function registerWebhookIntake(
  app: FastifyInstance,
  options: WebhookIntakeOptions,
): Promise<void> {
  const log = options.logger.child({ component: 'webhooks' });
  const intake: Intake = { options, log, count: (outcome) => options.onOutcome?.(outcome) };
  const refuseTooLarge = () => {
    intake.count('too_large');
    log.warn({ limit: options.bodyLimitBytes }, 'webhook refused: body over the limit');
    return { error: `body larger than ${options.bodyLimitBytes} bytes` };
  };
  refuseTooLargeBeforeContinue(app, options.bodyLimitBytes, refuseTooLarge);

  await app.register(async (scope) => {
    limitDeliveriesInFlight(scope, intake);
    readBodyAsBytes(scope, options.bodyLimitBytes);
    answerIntakeErrors(scope, log, refuseTooLarge);
    scope.post('/webhooks', (request, reply) => handleDelivery(intake, request, reply));
  });
}

/**
 * Capacity is decided when the headers are in, before the body is read: past
 * WEBHOOK_MAX_IN_FLIGHT the answer (503, Retry-After: 1) costs no parse, no signature
 * check and no database (docs/serve.md, "Limits"). A delivery counts until its response
 * closes (answered, or the connection gone).
 */
function limitDeliveriesInFlight(scope: FastifyInstance, { options, log, count }: Intake): void {
  let inFlight = 0;
  let lastOverloadLogAt = 0;
  scope.addHook('onRequest', async (_request, reply) => {
    if (inFlight >= options.maxInFlight) {
      count('overloaded');
      // At most one line a second: a flood must not flood the log.
      if (Date.now() - lastOverloadLogAt >= 1000) {
        lastOverloadLogAt = Date.now();
        log.warn(
          { limit: options.maxInFlight },
          'webhook answered 503: WEBHOOK_MAX_IN_FLIGHT deliveries are being handled; the sender retries after 1 s',
        );
      }
      return reply
        .code(503)
        .header('retry-after', '1')
        .send({ error: 'too many deliveries at once; retry after 1 s' });
    }
    inFlight += 1;
    options.onInFlight?.(inFlight);
    reply.raw.once('close', () => {
      inFlight -= 1;
      options.onInFlight?.(inFlight);
    });
  });
}

/** The body as raw bytes, whatever its content type, up to the limit: the signature is over them. */
function readBodyAsBytes(scope: FastifyInstance, bodyLimitBytes: number): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: bodyLimitBytes },
    (_request, body, done) => done(null, body),
  );
}

/**
 * The scope's errors: a body over the limit is answered 413 on the socket (answerAndLinger);
 * another client error keeps its status and message; anything else is logged and
 * answered 500 without detail.
 */
function answerIntakeErrors(
  scope: FastifyInstance,
  log: Logger,
  refuseTooLarge: () => Record<string, unknown>,
): void {
  scope.setErrorHandler((error: Error & { statusCode?: number; code?: string }, request, reply) => {
    if (error.statusCode === 413 || error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // From Content-Length before a byte of the body was read, or from the bytes
      // counted (chunked): either way, answered whole before the connection closes.
      reply.hijack();
      answerAndLinger(request.raw, 413, refuseTooLarge());
      return;
    }
    const status = error.statusCode && error.statusCode < 500 ? error.statusCode : 500;
    if (status >= 500) log.error({ err: error }, 'webhook intake failed');
    return reply.code(status).send({ error: status >= 500 ? 'internal error' : error.message });
  });
}

/**
 * `POST /webhooks` itself: the signature verified over the bytes as sent, then the JSON
 * object parsed, checked that the warehouse can store it as sent, stored and acknowledged.
 */
async function handleDelivery(
  intake: Intake,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  if (!verifySignature(raw, request.headers[SIGNATURE_HEADER], intake.options.secrets)) {
    intake.count('unauthorized');
    intake.log.warn(
      { signed: request.headers[SIGNATURE_HEADER] !== undefined, bytes: raw.length },
      'webhook refused: missing or invalid signature',
    );
    return reply.code(401).send({ error: 'missing or invalid X-Service-Signature' });
  }
  const record = parseJsonObject(raw);
  if (record === null) {
    intake.count('bad_json');
    intake.log.warn({ bytes: raw.length }, 'webhook refused: signed, but not a JSON object');
    return reply.code(400).send({ error: 'the body is not a JSON object' });
  }
  const unstorable = findUnstorableValue(record);
  if (unstorable) {
    return refuseUnstorable(intake, reply, raw, record, `${unstorable.path} ${unstorable.rule}`);
  }
  const event = webhookEventFromDelivery(raw, record, new Date());
  return storeAndAcknowledge(intake, reply, raw, record, event);
}

/** The body parsed as a JSON object, or null for anything else (invalid JSON, an array, a scalar). */
function parseJsonObject(raw: Buffer): Record<string, unknown> | null {
  let payload: unknown;
  try {
    payload = JSON.parse(raw.toString('utf8'));
  } catch {
    payload = undefined;
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return null;
  return payload as Record<string, unknown>;
}

/**
 * 422 for signed JSON the warehouse cannot store as sent, logged with the event kind, the
 * account and a redacted excerpt: the same bytes would fail again, so the sender must not
 * retry.
 */
function refuseUnstorable(
  { count, log }: Intake,
  reply: FastifyReply,
  raw: Buffer,
  record: Record<string, unknown>,
  reason: string,
  extra: Record<string, unknown> = {},
): FastifyReply {
  count('unprocessable');
  log.warn(
    {
      event: typeof record['event'] === 'string' ? excerptText(record['event']) : null,
      accountId: typeof record['account_id'] === 'number' ? record['account_id'] : null,
      bytes: raw.length,
      reason,
      excerpt: excerpt(raw),
      ...extra,
    },
    'webhook refused: signed, but the warehouse cannot store it as sent; the sender should not retry it',
  );
  return reply.code(422).send({ error: `the event cannot be stored: ${reason}` });
}

/**
 * Stores the event within STORE_TIMEOUT_MS and answers: 200 stored, or 200 `duplicate`
 * when its event key is stored already; 422 for a value the database refuses
 * (isPermanentStoreError); 503 with Retry-After for a database that is down or does not
 * answer (the sender retries).
 */
async function storeAndAcknowledge(
  intake: Intake,
  reply: FastifyReply,
  raw: Buffer,
  record: Record<string, unknown>,
  event: WebhookEventInput,
): Promise<FastifyReply> {
  const { options, log, count } = intake;
  let stored: boolean;
  try {
    ({ stored } = await withTimeout(recordWebhookEvent(options.db, event), STORE_TIMEOUT_MS));
  } catch (error) {
    if (isPermanentStoreError(error)) {
      const code = (error as { code?: unknown }).code;
      return refuseUnstorable(
        intake,
        reply,
        raw,
        record,
        `the database refused a value (${typeof code === 'string' ? `SQLSTATE ${code}` : (error as Error).name})`,
        { eventKey: event.eventKey, err: error },
      );
    }
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
  return reply.code(200).send({ received: true, duplicate: !stored, event_key: event.eventKey });
}
