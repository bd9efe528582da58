/**
 * How the sandbox answers (src/sandbox/server.ts): an operation's result as it is, a fault
 * in its place (reset, hang, 429, 500, 502, 503, an HTML page), or the result dripped a
 * chunk at a time on the sandbox clock.
 */
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FaultDecision } from './faults.ts';
import { type OperationResult, SANDBOX_MESSAGES } from './operations.ts';
import type { SandboxClock } from './sandbox-state.ts';

const BAD_GATEWAY_HTML =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';
const MAINTENANCE_HTML =
  '<!DOCTYPE html><html><head><title>Down for maintenance</title></head><body><h1>We&rsquo;ll be back soon</h1><p>The service is undergoing scheduled maintenance.</p></body></html>';

/** The result as JSON; an error's status is 200 when the faults say `errorsWith200`. */
export function sendResult(
  reply: FastifyReply,
  result: OperationResult,
  errorsWith200: boolean,
): void {
  const status = errorsWith200 && result.status >= 400 ? 200 : result.status;
  reply.code(status).type('application/json; charset=utf-8').send(result.body);
}

/** A fault instead of the answer; a hung connection is added to `hanging`. */
export function sendFault(
  request: FastifyRequest,
  reply: FastifyReply,
  decision: Exclude<FaultDecision, { kind: 'none' | 'answer' | 'drip' }>,
  hanging: Set<Socket>,
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
export function drip(
  reply: FastifyReply,
  result: OperationResult,
  decision: Extract<FaultDecision, { kind: 'drip' }>,
  clock: SandboxClock,
  answerDate: () => string,
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
