/**
 * The sandbox's requests as events: a logger for `startSandbox` that reads the debug line
 * the sandbox writes once it has answered a request (or started to drip, or left it
 * hanging: src/sandbox/server.ts) and wakes the tests waiting for it. A test awaits "the
 * sandbox answered the third list_listings" instead of polling its stats or sleeping; a
 * real process under test is held, or stopped, at a point its requests say it reached.
 */
import { createLogger, type Logger } from '../../src/log.ts';

/** One request, as the sandbox logged it. */
export interface SandboxRequest {
  operation: string;
  /** `ok`, `drip`, `hang`, `429`, `auth_failure`, …: the sandbox's stats outcome. */
  outcome: string;
  method: string;
  /** After `/api/v2`, without the query. */
  path: string;
  status: number;
}

export type RequestMatch = Partial<Pick<SandboxRequest, 'operation' | 'outcome'>>;

export interface SandboxRequests {
  /** The `logger` to give `startSandbox` (debug level: one line per request). */
  logger: Logger;
  /** The requests logged so far, in order. */
  seen(): SandboxRequest[];
  /** How many logged requests match. */
  count(match?: RequestMatch): number;
  /** Resolves once `count` logged requests match (at once, if they already do). */
  when(match: RequestMatch, count?: number): Promise<void>;
}

export function sandboxRequests(): SandboxRequests {
  const seen: SandboxRequest[] = [];
  const waiters: { match: RequestMatch; count: number; resolve: () => void }[] = [];
  const matches = (request: SandboxRequest, match: RequestMatch) =>
    (match.operation === undefined || request.operation === match.operation) &&
    (match.outcome === undefined || request.outcome === match.outcome);
  const count = (match: RequestMatch = {}) => seen.filter((r) => matches(r, match)).length;
  const settle = () => {
    for (const waiter of [...waiters]) {
      if (count(waiter.match) >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };
  const destination = {
    write(chunk: string) {
      for (const line of chunk.split('\n')) {
        if (!line.startsWith('{')) continue;
        const record = JSON.parse(line) as Partial<SandboxRequest> & { msg?: string };
        if (record.msg !== 'sandbox request') continue;
        seen.push({
          operation: String(record.operation),
          outcome: String(record.outcome),
          method: String(record.method),
          path: String(record.path),
          status: Number(record.status),
        });
      }
      settle();
    },
  };
  return {
    logger: createLogger({ level: 'debug', destination }),
    seen: () => [...seen],
    count,
    when: (match, wanted = 1) =>
      new Promise<void>((resolve) => {
        waiters.push({ match, count: wanted, resolve });
        settle();
      }),
  };
}
