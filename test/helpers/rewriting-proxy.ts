/**
 * A proxy in front of a real sandbox that hands each answer to `rewrite` before sending
 * it on: for the cases the sandbox never produces itself (one id under two businesses).
 * Everything else is the sandbox's own answer over real HTTP, its status and `Date`
 * header included.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Fetches `url` (a path and query) from the sandbox. */
export type Forward = (url: string) => Promise<{ answer: Response; text: string }>;

/** The body to send for the sandbox's answer to `url` (`text` to leave it as it is). */
export type Rewrite = (
  url: string,
  answer: Response,
  text: string,
  forward: Forward,
) => Promise<string>;

export async function startRewritingProxy(upstream: string, rewrite: Rewrite) {
  const forward: Forward = async (url) => {
    const answer = await fetch(new URL(url, upstream));
    return { answer, text: await answer.text() };
  };
  const server: Server = createServer(async (request, response) => {
    const url = request.url ?? '/';
    const { answer, text } = await forward(url);
    const body = await rewrite(url, answer, text, forward);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    const date = answer.headers.get('date');
    if (date) headers['date'] = date;
    response.writeHead(answer.status, headers);
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
