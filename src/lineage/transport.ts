/**
 * Where an event goes (docs/lineage.md, "Settings"): POSTed as JSON to
 * `{OPENLINEAGE_URL}/{OPENLINEAGE_ENDPOINT}` with `Authorization: Bearer` when
 * OPENLINEAGE_API_KEY is set, or appended as one JSON line to the file transport's file.
 * Each send is bounded by `timeoutMs` and rejects with a short reason (an error code, an
 * HTTP status or `timeout`), never the error's text, which may quote the URL.
 */
import { appendFile } from 'node:fs/promises';
import type { LineageTransport } from './settings.ts';

export type Send = (events: readonly object[]) => Promise<void>;

/** The receiver as a log line may show it: scheme, host, port and path, no user or query. */
export function printableTarget(transport: LineageTransport): string {
  if (transport.type === 'file') return transport.path;
  const url = URL.parse(endpointUrl(transport));
  return url ? `${url.protocol}//${url.host}${url.pathname}` : '[a URL that does not parse]';
}

export function endpointUrl(transport: Extract<LineageTransport, { type: 'http' }>): string {
  return `${transport.url.replace(/\/+$/, '')}/${transport.endpoint.replace(/^\/+/, '')}`;
}

export class EmitError extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(reason);
    this.name = 'EmitError';
    this.reason = reason;
  }
}

/** A short reason for `error`: a code, an HTTP status or `timeout`. */
function reasonOf(error: unknown): string {
  if (error instanceof EmitError) return error.reason;
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError'))
    return 'timeout';
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : 'unknown';
}

export function createSend(transport: LineageTransport, timeoutMs: number): Send {
  if (transport.type === 'file') {
    const path = transport.path;
    return async (events) => {
      if (events.length === 0) return;
      const text = events.map((event) => `${JSON.stringify(event)}\n`).join('');
      try {
        await bounded(appendFile(path, text, 'utf8'), timeoutMs);
      } catch (error) {
        throw new EmitError(reasonOf(error));
      }
    };
  }
  const url = new URL(endpointUrl(transport));
  // A user and password in OPENLINEAGE_URL go as Basic auth, never in a log line.
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (transport.apiKey) headers.authorization = `Bearer ${transport.apiKey}`;
  else if (url.username) {
    headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  }
  url.username = '';
  url.password = '';
  const target = url.toString();
  // Each event its own POST (the spec's endpoint takes one), side by side, all within one bound.
  return async (events) => {
    const signal = AbortSignal.timeout(timeoutMs);
    const results = await Promise.allSettled(
      events.map(async (event) => {
        const answer = await fetch(target, {
          method: 'POST',
          headers,
          body: JSON.stringify(event),
          signal,
        });
        await answer.body?.cancel().catch(() => {});
        if (answer.status < 200 || answer.status > 299)
          throw new EmitError(`HTTP ${answer.status}`);
      }),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw new EmitError(reasonOf(failed.reason));
  };
}

/** `work`, or a rejection named `timeout` after `ms` (the timer never holds the process). */
function bounded<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work,
    new Promise<T>((_resolve, reject) => {
      timer = setTimeout(() => reject(new EmitError('timeout')), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}
