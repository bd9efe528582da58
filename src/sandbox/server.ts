/**
 * The sandbox server: an HTTP emulator of the Business Listings Management Service API
 * v2 (docs/upstream.md), with generated data, a clock and faults, used as
 * the upstream by every test, the demo and the benchmarks.
 *
 * `/api/v2/...` serves the 17 operations (each with or without `.json`), authenticated
 * by `auth_token` and `user_email`, faulted per the fault settings. `/__sandbox/...` is
 * the control surface (clock, faults, stats, webhooks): no auth, never faulted.
 */
import Fastify from 'fastify';
import { type Logger, silentLogger } from '../log.ts';
import { sleep } from '../sleep.ts';
import { registerApiRoutes, registerBodyParsers } from './api-routes.ts';
import { createBodyCache } from './body-cache.ts';
import { registerControlRoutes } from './control-routes.ts';
import { createFaultState, DEFAULT_FAULTS, type FaultSettings, mergeFaults } from './faults.ts';
import {
  advanceDays,
  answerDate,
  emptyStats,
  type SandboxClock,
  type SandboxCredential,
  type SandboxState,
  type SandboxStats,
} from './sandbox-state.ts';
import { createWorld, today } from './world.ts';

export type { FaultSettings, ScriptedFault } from './faults.ts';
/** No faults at all: what a test restores between cases. */
export { DEFAULT_FAULTS } from './faults.ts';
export type { SandboxClock, SandboxCredential, SandboxStats } from './sandbox-state.ts';

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

/** The real time: what the sandbox always waited on, a timer per wait. */
export const wallClock: SandboxClock = Object.freeze({
  now: () => Date.now(),
  sleep,
});

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

function hostForUrl(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** `YYYY-MM-DD` that reads back the same, or an error: Date.parse rolls 2026-02-30 over to March. */
function checkStartDate(startDate: string): void {
  const start = /^\d{4}-\d{2}-\d{2}$/.test(startDate) ? new Date(`${startDate}T00:00:00Z`) : null;
  if (!start || Number.isNaN(start.getTime()) || start.toISOString().slice(0, 10) !== startDate) {
    throw new Error(`startDate must be a date as YYYY-MM-DD (got "${startDate}").`);
  }
}

export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const startDate = options.startDate ?? '2026-01-01';
  checkStartDate(startDate);
  const world = createWorld({
    seed: options.seed ?? 1,
    accounts: options.accounts ?? 2,
    businessesPerAccount: options.businessesPerAccount ?? 25,
    startDate,
  });
  const state: SandboxState = {
    world,
    faults: createFaultState(world.seed, mergeFaults(DEFAULT_FAULTS, options.faults ?? {})),
    cache: createBodyCache(),
    clock: options.clock ?? wallClock,
    logger: options.logger ?? silentLogger(),
    stats: emptyStats(),
    webhookEventsEmitted: 0,
    hanging: new Set(),
    credentials: [],
  };

  const app = Fastify({
    logger: false,
    // Hung requests never end on their own: closing must cut every connection.
    forceCloseConnections: true,
    bodyLimit: 10 * 1024 * 1024,
  });
  registerBodyParsers(app);
  // Every answer is dated by the sandbox clock, as it goes out (sandbox-state.ts, answerDate).
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('date', answerDate(state));
    return payload;
  });
  registerApiRoutes(app, state);
  registerControlRoutes(app, state);

  const host = options.host ?? '127.0.0.1';
  await app.listen({ host, port: options.port ?? 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? 0);
  const baseUrl = `http://${hostForUrl(host)}:${port}`;
  state.credentials = world.accounts.map((a) => ({
    name: a.name,
    baseUrl,
    authToken: a.authToken,
    userEmail: a.userEmail,
  }));

  return {
    baseUrl,
    credentials: state.credentials,
    today: () => today(world),
    advanceDays: (days) => advanceDays(world, days),
    setFaults: (patch) => {
      state.faults.settings = mergeFaults(state.faults.settings, patch);
    },
    stats: () => structuredClone(state.stats),
    resetStats: () => {
      state.stats = emptyStats();
    },
    close: async () => {
      for (const socket of state.hanging) socket.destroy();
      state.hanging.clear();
      await app.close();
    },
  };
}
