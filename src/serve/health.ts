/**
 * `/healthz`: the process answers. `/readyz`: the warehouse answers and its schema is
 * current (no pending migration); 503 with the reason otherwise, so a load balancer stops
 * sending webhooks to a replica that cannot store them.
 */
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { redactText } from '../log.ts';
import type { Database } from '../warehouse/database.ts';
import { pendingMigrations } from '../warehouse/driver/migrate.ts';

/** A readiness probe that waits longer than this is answered "not ready". */
const READY_TIMEOUT_MS = 3_000;

export type Readiness = { ready: true } | { ready: false; reason: string };

export async function checkReadiness(db: Kysely<Database>): Promise<Readiness> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const pending = await Promise.race([
      pendingMigrations(db),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${READY_TIMEOUT_MS} ms`)),
          READY_TIMEOUT_MS,
        );
      }),
    ]);
    if (pending.length) {
      return {
        ready: false,
        reason: `${pending.length} migration(s) pending (${pending.join(', ')}); run \`listings-sync migrate\``,
      };
    }
    return { ready: true };
  } catch (error) {
    return {
      ready: false,
      reason: `the database is unreachable: ${redactText((error as Error).message)}`,
    };
  } finally {
    clearTimeout(timer);
  }
}

export function registerHealth(app: FastifyInstance, db: Kysely<Database>): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const readiness = await checkReadiness(db);
    if (readiness.ready) return { status: 'ready' };
    return reply.code(503).send({ status: 'not ready', reason: readiness.reason });
  });
}
