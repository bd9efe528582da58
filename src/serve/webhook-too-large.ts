/**
 * The 413 of `POST /webhooks`, written so that the sender always reads it: decided from
 * Content-Length before `100 Continue` is sent (or before the body is read), else from the
 * bytes counted (chunked); written whole, then the connection is half-closed and the rest
 * of the body read and dropped for up to LINGER_MS, so that closing never resets the
 * connection under the answer (docs/serve.md, "Webhooks").
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';

/**
 * After a refusal sent before the body was read (413), how long the rest of the body is
 * read and dropped while the sender stops: closing with unread bytes would reset the
 * connection, and a reset can destroy the answer before the sender reads it.
 */
export const LINGER_MS = 5_000;

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

/**
 * `Expect: 100-continue`: a Content-Length over the limit is answered 413 instead of
 * `100 Continue`, so the sender never sends the body. Any other request goes on as Node
 * would take it (100 Continue, then the route). `refusal` counts and logs the refusal and
 * returns the answer's body.
 */
export function refuseTooLargeBeforeContinue(
  app: FastifyInstance,
  bodyLimitBytes: number,
  refusal: () => Record<string, unknown>,
): void {
  app.server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    const length = Number(request.headers['content-length']);
    if (
      request.method === 'POST' &&
      (request.url ?? '').split('?')[0] === '/webhooks' &&
      Number.isFinite(length) &&
      length > bodyLimitBytes
    ) {
      answerAndLinger(request, 413, refusal());
      return;
    }
    response.writeContinue();
    app.server.emit('request', request, response);
  });
}
