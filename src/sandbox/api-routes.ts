/**
 * The sandbox's `/api/v2/...` routes (src/sandbox/server.ts): the request bodies parsed, the
 * caller authenticated by `auth_token` and `user_email`, the operation run, and the answer
 * faulted, reshaped or dripped per the fault settings; every request counted and logged.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { reshapeAnswer } from './answer-faults.ts';
import { drip, sendFault, sendResult } from './fault-replies.ts';
import { decideFault, latencyFor } from './faults.ts';
import {
  failure,
  MESSAGES,
  matchOperation,
  type OperationResult,
  runOperation,
  SANDBOX_MESSAGES,
} from './operations.ts';
import { answerDate, type SandboxState } from './sandbox-state.ts';

/** Bodies that could not be parsed: the handlers answer 400 rather than fastify's own error. */
const INVALID_BODY = Object.freeze({ invalid: true });
const INVALID_FORM = Object.freeze({ invalid: 'form' });

function parseJsonText(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return INVALID_BODY;
  }
}

/** A path segment decoded, or left as it is when its escapes are broken. */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** JSON, urlencoded and multipart forms; anything else read as JSON. */
export function registerBodyParsers(app: FastifyInstance): void {
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
}

function count(state: SandboxState, operation: string, outcome: string): void {
  const byOutcome = state.stats.byOperation[operation] ?? {};
  state.stats.byOperation[operation] = byOutcome;
  byOutcome[outcome] = (byOutcome[outcome] ?? 0) + 1;
}

/** The operation's own answer: 401 before 404 before a body that did not parse. */
function answer(
  state: SandboxState,
  request: FastifyRequest,
  match: ReturnType<typeof matchOperation>,
  token: string,
  query: Record<string, unknown>,
): OperationResult {
  const account = state.world.accountByToken.get(token);
  const email = query['user_email'];
  if (!account || typeof email !== 'string' || email.toLowerCase() !== account.userEmail) {
    return failure(401, MESSAGES.auth, 'auth_failure');
  }
  if (!match) return failure(404, SANDBOX_MESSAGES.notFound, 'not_found');
  if (request.body === INVALID_BODY) {
    return failure(400, SANDBOX_MESSAGES.invalidBody, 'validation');
  }
  if (request.body === INVALID_FORM) {
    return failure(400, SANDBOX_MESSAGES.invalidForm, 'validation');
  }
  return runOperation(match.operation, {
    world: state.world,
    account,
    cache: state.cache,
    malformedRate: state.faults.settings.malformedRate,
    params: match.params.map(safeDecode),
    query,
    body: request.body,
  });
}

async function handleApi(
  state: SandboxState,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const { faults, clock } = state;
  const path = (request.url.split('?')[0] ?? '').slice('/api/v2'.length);
  const query = (request.query ?? {}) as Record<string, unknown>;
  const match = matchOperation(request.method, path);
  const operation = !match
    ? 'unknown'
    : match.operation === 'get_business' && query['type'] === 'all'
      ? 'get_business_full'
      : match.operation;
  state.stats.requests++;
  const token = typeof query['auth_token'] === 'string' ? query['auth_token'] : '';
  const decision = decideFault(faults, operation, token, clock.now());
  const delay = latencyFor(faults);
  if (delay > 0) await clock.sleep(delay);
  let outcome: string;
  if (decision.kind !== 'none' && decision.kind !== 'answer' && decision.kind !== 'drip') {
    outcome = decision.kind;
    sendFault(request, reply, decision, state.hanging);
  } else {
    let result = answer(state, request, match, token, query);
    state.stats.malformedRecordsServed += result.malformed;
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
      drip(reply, result, decision, clock, () => answerDate(state));
    } else {
      sendResult(reply, result, faults.settings.errorsWith200);
    }
  }
  count(state, operation, outcome);
  state.logger.debug(
    { operation, outcome, method: request.method, path, status: reply.statusCode },
    'sandbox request',
  );
}

/** `/api/v2/*` and `/api/v2` itself, every method. */
export function registerApiRoutes(app: FastifyInstance, state: SandboxState): void {
  const handler = (request: FastifyRequest, reply: FastifyReply) =>
    handleApi(state, request, reply);
  app.route({ method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/api/v2/*', handler });
  app.route({ method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/api/v2', handler });
}
