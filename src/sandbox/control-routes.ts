/**
 * The sandbox's control surface, `/__sandbox/...` (src/sandbox/server.ts): the clock, the
 * fault settings, the stats, the credentials and webhook events. No auth, never faulted.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { FaultSettingsError, mergeFaults } from './faults.ts';
import { SANDBOX_MESSAGES } from './operations.ts';
import { advanceDays, emptyStats, type SandboxState } from './sandbox-state.ts';
import {
  boostEvent,
  type DeliveryReport,
  deliver,
  EmitRequestError,
  parseEmitRequest,
  signWebhookBody,
} from './webhooks.ts';
import { today } from './world.ts';

const badRequest = (reply: FastifyReply, message: string) =>
  reply.code(400).send({ error: message });

/** `webhooks/emit`: make the events, sign them and deliver each copy, in order. */
async function emitWebhooks(state: SandboxState, requestBody: unknown, reply: FastifyReply) {
  const { world, clock } = state;
  let emit: ReturnType<typeof parseEmitRequest>;
  try {
    emit = parseEmitRequest(requestBody);
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
    const event = boostEvent(
      world.seed,
      state.webhookEventsEmitted++,
      account.numericId,
      timestamp,
    );
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
}

/** The `/__sandbox/...` routes, and the 404 for any other path. */
export function registerControlRoutes(app: FastifyInstance, state: SandboxState): void {
  const { world } = state;
  app.get('/__sandbox/clock', async () => ({ date: today(world) }));
  app.post('/__sandbox/clock/advance', async (request, reply) => {
    const body = request.body as Record<string, unknown> | undefined;
    const days = body?.['days'] ?? 1;
    try {
      advanceDays(world, days as number);
    } catch (error) {
      return badRequest(reply, (error as Error).message);
    }
    return { date: today(world) };
  });
  app.get('/__sandbox/faults', async () => state.faults.settings);
  app.put('/__sandbox/faults', async (request, reply) => {
    try {
      state.faults.settings = mergeFaults(state.faults.settings, request.body ?? {});
    } catch (error) {
      if (error instanceof FaultSettingsError) return badRequest(reply, error.message);
      throw error;
    }
    return state.faults.settings;
  });
  app.get('/__sandbox/stats', async () => state.stats);
  app.post('/__sandbox/stats/reset', async () => {
    state.stats = emptyStats();
    return state.stats;
  });
  app.get('/__sandbox/credentials', async () => state.credentials);
  app.post('/__sandbox/webhooks/emit', async (request, reply) =>
    emitWebhooks(state, request.body, reply),
  );
  app.setNotFoundHandler((_request, reply) => {
    reply.code(404).send({ success: false, message: SANDBOX_MESSAGES.notFound });
  });
}
