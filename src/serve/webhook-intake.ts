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
 * Continue` is sent (or before the body is read), else from the bytes counted (chunked);
 * written whole, then the connection is half-closed and the rest of the body read and
 * dropped for up to LINGER_MS, so that closing never resets the connection under the
 * answer (docs/serve.md, "Webhooks").
 * An unknown event kind is stored and acknowledged. The signature and the secrets are
 * never logged; a refused delivery is logged with its kind and a short, redacted excerpt
 * of its body, for diagnosis. 503 is kept for a database that is down or does not answer.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
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

export const BOOST_CREATED = 'social_post.boost_created';

/** A delivery must be stored within this time or the sender is told to retry (503). */
export const STORE_TIMEOUT_MS = 10_000;
/**
 * The deepest nesting accepted. The documented event is two levels deep; 64 leaves room
 * for kinds the upstream may add, and keeps every walk of the payload (redaction, jsonb
 * input, logging) far from a stack limit.
 */
const MAX_DEPTH = 64;
/**
 * After a refusal sent before the body was read (413), how long the rest of the body is
 * read and dropped while the sender stops: closing with unread bytes would reset the
 * connection, and a reset can destroy the answer before the sender reads it.
 */
export const LINGER_MS = 5_000;
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

/**
 * Answers `status` on the request's socket and closes it without a reset: the answer is
 * written whole with `Connection: close`, the sending side half-closed, and whatever of
 * the body still arrives is read and dropped until the sender closes, or LINGER_MS.
 * Node's own close (`Connection: close` on a response) destroys the socket as soon as
 * the answer is written, and unread bytes then make the kernel send a reset.
 */
export function answerAndLinger(
  request: IncomingMessage,
  status: 413,
  body: Record<string, unknown>,
): void {
  const socket = request.socket;
  const text = JSON.stringify(body);
  socket.write(
    `HTTP/1.1 ${status} Payload Too Large\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(text)}\r\n` +
      'connection: close\r\n\r\n' +
      text,
  );
  socket.end();
  // The body's bytes go on being parsed and dropped; nothing waits for them.
  request.resume();
  const linger = setTimeout(() => socket.destroy(), LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
}

/** Registers `POST /webhooks` in its own scope (its body parser applies to it alone). */
export async function registerWebhookIntake(
  app: FastifyInstance,
  options: WebhookIntakeOptions,
): Promise<void> {
  const log = options.logger.child({ component: 'webhooks' });
  const count = (outcome: WebhookOutcome) => options.onOutcome?.(outcome);

  let inFlight = 0;
  let lastOverloadLogAt = 0;
  const refuseTooLarge = () => {
    count('too_large');
    log.warn({ limit: options.bodyLimitBytes }, 'webhook refused: body over the limit');
    return { error: `body larger than ${options.bodyLimitBytes} bytes` };
  };

  // `Expect: 100-continue`: a Content-Length over the limit is answered 413 instead of
  // `100 Continue`, so the sender never sends the body. Any other request goes on as Node
  // would take it (100 Continue, then the route).
  app.server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    const length = Number(request.headers['content-length']);
    if (
      request.method === 'POST' &&
      (request.url ?? '').split('?')[0] === '/webhooks' &&
      Number.isFinite(length) &&
      length > options.bodyLimitBytes
    ) {
      answerAndLinger(request, 413, refuseTooLarge());
      return;
    }
    response.writeContinue();
    app.server.emit('request', request, response);
  });

  await app.register(async (scope) => {
    // Capacity is decided when the headers are in, before the body is read: past it the
    // answer costs no parse, no signature check and no database (docs/serve.md, "Limits").
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
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: options.bodyLimitBytes },
      (_request, body, done) => done(null, body),
    );
    scope.setErrorHandler(
      (error: Error & { statusCode?: number; code?: string }, request, reply) => {
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
      const record = payload as Record<string, unknown>;
      const refuse = (reason: string, extra: Record<string, unknown> = {}) => {
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
      };
      const unstorable = findUnstorableValue(record);
      if (unstorable) return refuse(`${unstorable.path} ${unstorable.rule}`);
      const event = webhookEventFromDelivery(raw, record, new Date());
      let stored: boolean;
      try {
        ({ stored } = await withTimeout(recordWebhookEvent(options.db, event), STORE_TIMEOUT_MS));
      } catch (error) {
        if (isPermanentStoreError(error)) {
          const code = (error as { code?: unknown }).code;
          return refuse(
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
      return reply
        .code(200)
        .send({ received: true, duplicate: !stored, event_key: event.eventKey });
    });
  });
}
