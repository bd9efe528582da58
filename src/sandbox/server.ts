/**
 * The sandbox server: an HTTP emulator of the Business Listings Management Service API
 * v2 (docs/upstream.md), with generated data, a clock and faults, used as
 * the upstream by every test, the demo and the benchmarks.
 *
 * `/api/v2/...` serves the 17 operations (each with or without `.json`), authenticated
 * by `auth_token` and `user_email`, faulted per the fault settings. `/__sandbox/...` is
 * the control surface (clock, faults, stats, webhooks): no auth, never faulted.
 */
import type { Socket } from 'node:net';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { type Logger, silentLogger } from '../log.ts';
import { sleep } from '../sleep.ts';
import { reshapeAnswer } from './answer-faults.ts';
import { createBodyCache } from './body-cache.ts';
import {
  createFaultState,
  DEFAULT_FAULTS,
  decideFault,
  type FaultDecision,
  type FaultSettings,
  FaultSettingsError,
  latencyFor,
  mergeFaults,
} from './faults.ts';
import {
  failure,
  MESSAGES,
  matchOperation,
  type OperationResult,
  runOperation,
  SANDBOX_MESSAGES,
} from './operations.ts';
import {
  boostEvent,
  type DeliveryReport,
  deliver,
  EmitRequestError,
  parseEmitRequest,
  signWebhookBody,
} from './webhooks.ts';
import { createWorld, today, type World } from './world.ts';

export type { FaultSettings, ScriptedFault } from './faults.ts';
/** No faults at all: what a test restores between cases. */
export { DEFAULT_FAULTS } from './faults.ts';

export interface SandboxOptions {
  seed?: number;
  accounts?: number;
  businessesPerAccount?: number;
  /** The clock's day 0, `YYYY-MM-DD`. */
  startDate?: string;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  faults?: Partial<FaultSettings>;
  /** Requests are logged at debug level, without tokens. Silent by default. */
  logger?: Logger;
  /** Where the sandbox reads the time and waits; the wall clock by default. */
  clock?: SandboxClock;
}

/**
 * The sandbox's time: added latency, a dripped body's ticks and the pauses between webhook
 * delivery attempts wait on `sleep`; the rate limit's buckets, the time of day in each
 * answer's `Date` and a webhook event's time read `now`. A test gives a clock it moves by
 * hand, so that it can hold a request and release it by moving the time, and assert the
 * order of what happens rather than how long it took (docs/development.md, "The test
 * suite"). The same shape as the API client's clock, but the sandbox's own: the sandbox is
 * a separate program, written from the spec, and imports nothing of the client.
 */
export interface SandboxClock {
  /** Milliseconds since the epoch, as `Date.now()`. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason as soon as it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real time: what the sandbox always waited on, a timer per wait. */
export const wallClock: SandboxClock = Object.freeze({
  now: () => Date.now(),
  sleep,
});

export interface SandboxCredential {
  name: string;
  /** Everything before `/api/v2`. */
  baseUrl: string;
  authToken: string;
  userEmail: string;
}

export interface SandboxStats {
  requests: number;
  /** Operation name → outcome (`ok`, `auth_failure`, `not_found`, `validation`, `429`, ...) → count. */
  byOperation: Record<string, Record<string, number>>;
  malformedRecordsServed: number;
}

export interface RunningSandbox {
  baseUrl: string;
  /** One per account, deterministic from its random seed. */
  credentials: SandboxCredential[];
  /** The clock's current day, `YYYY-MM-DD`. */
  today(): string;
  advanceDays(days: number): void;
  setFaults(f: Partial<FaultSettings>): void;
  stats(): SandboxStats;
  resetStats(): void;
  close(): Promise<void>;
}

/** Bodies that could not be parsed: the handlers answer 400 rather than fastify's own error. */
const INVALID_BODY = Object.freeze({ invalid: true });
const INVALID_FORM = Object.freeze({ invalid: 'form' });

const BAD_GATEWAY_HTML =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';
const MAINTENANCE_HTML =
  '<!DOCTYPE html><html><head><title>Down for maintenance</title></head><body><h1>We&rsquo;ll be back soon</h1><p>The service is undergoing scheduled maintenance.</p></body></html>';

function parseJsonText(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return INVALID_BODY;
  }
}

function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** A path segment decoded, or left as it is when its escapes are broken. */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const logger = options.logger ?? silentLogger();
  const clock = options.clock ?? wallClock;
  const startDate = options.startDate ?? '2026-01-01';
  // Date.parse rolls 2026-02-30 over to March: only a date that reads back the same is one.
  const start = /^\d{4}-\d{2}-\d{2}$/.test(startDate) ? new Date(`${startDate}T00:00:00Z`) : null;
  if (!start || Number.isNaN(start.getTime()) || start.toISOString().slice(0, 10) !== startDate) {
    throw new Error(`startDate must be a date as YYYY-MM-DD (got "${startDate}").`);
  }
  const world: World = createWorld({
    seed: options.seed ?? 1,
    accounts: options.accounts ?? 2,
    businessesPerAccount: options.businessesPerAccount ?? 25,
    startDate,
  });
  const faults = createFaultState(world.seed, mergeFaults(DEFAULT_FAULTS, options.faults ?? {}));
  const cache = createBodyCache();
  let stats: SandboxStats = { requests: 0, byOperation: {}, malformedRecordsServed: 0 };
  let webhookEventsEmitted = 0;
  const hanging = new Set<Socket>();

  const count = (operation: string, outcome: string) => {
    const byOutcome = stats.byOperation[operation] ?? {};
    stats.byOperation[operation] = byOutcome;
    byOutcome[outcome] = (byOutcome[outcome] ?? 0) + 1;
  };

  const app = Fastify({
    logger: false,
    // Hung requests never end on their own: closing must cut every connection.
    forceCloseConnections: true,
    bodyLimit: 10 * 1024 * 1024,
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    done(null, parseJsonText(body as string));
  });
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    },
  );
  // Operation 13 is labelled form data: a real client may well send multipart. undici's
  // Response parses it, so no multipart dependency is needed (docs/upstream.md, Operations).
  app.addContentTypeParser(
    'multipart/form-data',
    { parseAs: 'buffer' },
    async (req: FastifyRequest, body: Buffer) => {
      try {
        const form = await new Response(body, {
          headers: { 'content-type': String(req.headers['content-type']) },
        }).formData();
        const fields: Record<string, string> = {};
        for (const [key, value] of form) {
          if (typeof value === 'string') fields[key] = value;
        }
        return fields;
      } catch {
        return INVALID_FORM;
      }
    },
  );
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => {
    done(null, parseJsonText(body as string));
  });

  // The HTTP `Date` of every answer follows the sandbox clock (its day, at the time of day
  // `clock` reads: the wall clock's, unless a test gives one), as a real upstream's follows
  // its own: a sync keys rank days by the upstream's date, so `clock/advance` + `sync`
  // records a new day of history. It is read as the answer goes out, after any added
  // latency, not as the request arrives: an answer held across the sandbox's midnight
  // carries the new day with the new day's data (docs/running.md, "Which day a sync
  // records").
  const answerDate = () => {
    const timeOfDay = clock.now() % 86_400_000;
    return new Date(Date.parse(`${today(world)}T00:00:00Z`) + timeOfDay).toUTCString();
  };
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('date', answerDate());
    return payload;
  });

  const advanceDays = (days: number) => {
    if (!Number.isInteger(days) || days < 0) {
      throw new RangeError('days must be a whole number of at least 0.');
    }
    world.day += days;
  };

  function send(reply: FastifyReply, result: OperationResult): void {
    const status = faults.settings.errorsWith200 && result.status >= 400 ? 200 : result.status;
    reply.code(status).type('application/json; charset=utf-8').send(result.body);
  }

  function sendFault(
    request: FastifyRequest,
    reply: FastifyReply,
    decision: Exclude<FaultDecision, { kind: 'none' }>,
  ): void {
    switch (decision.kind) {
      case 'reset':
        reply.hijack();
        request.raw.socket.destroy();
        return;
      case 'hang': {
        reply.hijack();
        const socket = request.raw.socket;
        hanging.add(socket);
        socket.once('close', () => hanging.delete(socket));
        return;
      }
      case '429':
        reply
          .code(429)
          .header('retry-after', String(decision.retryAfterSeconds))
          .type('application/json; charset=utf-8')
          .send(JSON.stringify({ success: false, message: SANDBOX_MESSAGES.rateLimited }));
        return;
      case '500':
        reply
          .code(500)
          .type('application/json; charset=utf-8')
          .send(JSON.stringify({ success: false, message: SANDBOX_MESSAGES.internalError }));
        return;
      case '502':
        reply.code(502).type('text/html').send(BAD_GATEWAY_HTML);
        return;
      case '503':
        reply.code(503).type('text/plain').send('Service Temporarily Unavailable');
        return;
      case 'non-json':
        reply.code(200).type('text/html; charset=utf-8').send(MAINTENANCE_HTML);
        return;
    }
  }

  /** Headers at once, then the body `chunkBytes` at a time every `intervalMs` of `clock`. */
  function drip(
    reply: FastifyReply,
    result: OperationResult,
    decision: Extract<FaultDecision, { kind: 'drip' }>,
  ): void {
    const text = Buffer.from(result.body);
    const padding = Math.max(0, decision.padToBytes - text.length);
    const body = Buffer.concat([text, Buffer.alloc(padding, ' ')]);
    reply.hijack();
    const raw = reply.raw;
    // Hijacked, the answer skips the onSend hook: its headers go now, dated now.
    raw.writeHead(result.status, {
      date: answerDate(),
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(body.length),
    });
    raw.flushHeaders();
    // A tick, then a chunk, until the body is out; the connection closing ends the wait.
    const closed = new AbortController();
    raw.once('close', () => closed.abort());
    const dripBody = async () => {
      let sent = 0;
      do {
        await clock.sleep(decision.intervalMs, closed.signal);
        if (raw.destroyed) return;
        const next = body.subarray(sent, sent + decision.chunkBytes);
        sent += next.length;
        if (sent >= body.length) raw.end(next);
        else raw.write(next);
      } while (sent < body.length);
    };
    // A rejection is the close: the client went away, nothing is left to send.
    dripBody().catch(() => {});
  }

  async function handleApi(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const path = (request.url.split('?')[0] ?? '').slice('/api/v2'.length);
    const query = (request.query ?? {}) as Record<string, unknown>;
    const match = matchOperation(request.method, path);
    const operation = !match
      ? 'unknown'
      : match.operation === 'get_business' && query['type'] === 'all'
        ? 'get_business_full'
        : match.operation;
    stats.requests++;
    const token = typeof query['auth_token'] === 'string' ? query['auth_token'] : '';
    const decision = decideFault(faults, operation, token, clock.now());
    const delay = latencyFor(faults);
    if (delay > 0) await clock.sleep(delay);
    let outcome: string;
    if (decision.kind !== 'none' && decision.kind !== 'answer' && decision.kind !== 'drip') {
      outcome = decision.kind;
      sendFault(request, reply, decision);
    } else {
      const account = world.accountByToken.get(token);
      const email = query['user_email'];
      let result: OperationResult;
      if (!account || typeof email !== 'string' || email.toLowerCase() !== account.userEmail) {
        result = failure(401, MESSAGES.auth, 'auth_failure');
      } else if (!match) {
        result = failure(404, SANDBOX_MESSAGES.notFound, 'not_found');
      } else if (request.body === INVALID_BODY) {
        result = failure(400, SANDBOX_MESSAGES.invalidBody, 'validation');
      } else if (request.body === INVALID_FORM) {
        result = failure(400, SANDBOX_MESSAGES.invalidForm, 'validation');
      } else {
        result = runOperation(match.operation, {
          world,
          account,
          cache,
          malformedRate: faults.settings.malformedRate,
          params: match.params.map(safeDecode),
          query,
          body: request.body,
        });
      }
      stats.malformedRecordsServed += result.malformed;
      outcome = result.outcome;
      if (decision.kind === 'answer' && result.status === 200) {
        const body = reshapeAnswer(operation, result.body, decision.fault);
        if (body !== undefined) {
          result = { ...result, body };
          outcome = decision.fault.kind;
        }
      }
      if (decision.kind === 'drip') {
        outcome = 'drip';
        drip(reply, result, decision);
      } else {
        send(reply, result);
      }
    }
    count(operation, outcome);
    logger.debug(
      { operation, outcome, method: request.method, path, status: reply.statusCode },
      'sandbox request',
    );
  }

  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/api/v2/*',
    handler: handleApi,
  });
  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/api/v2',
    handler: handleApi,
  });

  const badRequest = (reply: FastifyReply, message: string) =>
    reply.code(400).send({ error: message });

  app.get('/__sandbox/clock', async () => ({ date: today(world) }));
  app.post('/__sandbox/clock/advance', async (request, reply) => {
    const body = request.body as Record<string, unknown> | undefined;
    const days = body?.['days'] ?? 1;
    try {
      advanceDays(days as number);
    } catch (error) {
      return badRequest(reply, (error as Error).message);
    }
    return { date: today(world) };
  });
  app.get('/__sandbox/faults', async () => faults.settings);
  app.put('/__sandbox/faults', async (request, reply) => {
    try {
      faults.settings = mergeFaults(faults.settings, request.body ?? {});
    } catch (error) {
      if (error instanceof FaultSettingsError) return badRequest(reply, error.message);
      throw error;
    }
    return faults.settings;
  });
  app.get('/__sandbox/stats', async () => stats);
  app.post('/__sandbox/stats/reset', async () => {
    stats = { requests: 0, byOperation: {}, malformedRecordsServed: 0 };
    return stats;
  });
  app.get('/__sandbox/credentials', async () => credentials);
  app.post('/__sandbox/webhooks/emit', async (request, reply) => {
    let emit: ReturnType<typeof parseEmitRequest>;
    try {
      emit = parseEmitRequest(request.body);
    } catch (error) {
      if (error instanceof EmitRequestError) return badRequest(reply, error.message);
      throw error;
    }
    const account = emit.account
      ? world.accounts.find((a) => a.name === emit.account)
      : world.accounts[0];
    if (!account) {
      return badRequest(
        reply,
        `account must be one of ${world.accounts.map((a) => a.name).join(', ')}.`,
      );
    }
    const deliveries: DeliveryReport[] = [];
    for (let i = 0; i < emit.count; i++) {
      // The sandbox clock's day at the time of day `clock` reads (the wall clock's, unless
      // a test gives one): events sort with the data the sandbox serves for that day, and
      // still differ within one day.
      const timestamp = `${today(world)}T${new Date(clock.now()).toISOString().slice(11)}`;
      const event = boostEvent(world.seed, webhookEventsEmitted++, account.numericId, timestamp);
      const body = JSON.stringify(event);
      const signature = signWebhookBody(emit.secret, body, emit.encoding);
      const adRunId = (event['data'] as { ad_run_id: string }).ad_run_id;
      for (let copy = 1; copy <= emit.repeat; copy++) {
        deliveries.push({
          adRunId,
          copy,
          ...(await deliver(emit.url, body, signature, (ms) => clock.sleep(ms))),
        });
      }
    }
    return {
      events: emit.count,
      delivered: deliveries.filter((d) => d.delivered).length,
      failed: deliveries.filter((d) => !d.delivered).length,
      deliveries,
    };
  });
  app.setNotFoundHandler((_request, reply) => {
    reply.code(404).send({ success: false, message: SANDBOX_MESSAGES.notFound });
  });

  const host = options.host ?? '127.0.0.1';
  await app.listen({ host, port: options.port ?? 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? 0);
  const baseUrl = `http://${hostForUrl(host)}:${port}`;
  const credentials: SandboxCredential[] = world.accounts.map((a) => ({
    name: a.name,
    baseUrl,
    authToken: a.authToken,
    userEmail: a.userEmail,
  }));

  return {
    baseUrl,
    credentials,
    today: () => today(world),
    advanceDays,
    setFaults: (patch) => {
      faults.settings = mergeFaults(faults.settings, patch);
    },
    stats: () => structuredClone(stats),
    resetStats: () => {
      stats = { requests: 0, byOperation: {}, malformedRecordsServed: 0 };
    },
    close: async () => {
      for (const socket of hanging) socket.destroy();
      hanging.clear();
      await app.close();
    },
  };
}
