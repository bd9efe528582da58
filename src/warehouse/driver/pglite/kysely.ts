/** The Kysely instance of an embedded (PGlite) warehouse. */
import type { PGlite } from '@electric-sql/pglite';
import { type Driver, Kysely, PGliteDialect, PGliteDriver } from 'kysely';
import type { Database } from '../../database.ts';

/**
 * Kysely's PGlite driver begins a transaction inside PGlite's own `transaction()` and
 * waits for its callback to start: on a closed instance that call rejects before the
 * callback runs, so the wait never ends and the rejection goes unheard (the process's
 * unhandled rejection). A closed warehouse fails the transaction instead, as a closed
 * pg pool does.
 */
class ClosedAwarePGliteDriver extends PGliteDriver {
  readonly #pglite: PGlite;
  constructor(pglite: PGlite) {
    super({ pglite });
    this.#pglite = pglite;
  }
  override async beginTransaction(
    ...args: Parameters<PGliteDriver['beginTransaction']>
  ): Promise<void> {
    if (this.#pglite.closed) throw new Error('PGlite is closed');
    return super.beginTransaction(...args);
  }
}

class ClosedAwarePGliteDialect extends PGliteDialect {
  readonly #pglite: PGlite;
  constructor(pglite: PGlite) {
    super({ pglite });
    this.#pglite = pglite;
  }
  override createDriver(): Driver {
    return new ClosedAwarePGliteDriver(this.#pglite);
  }
}

/** The Kysely instance of an open PGlite, as every embedded warehouse has it. */
export function pgliteKysely(pglite: PGlite): Kysely<Database> {
  return new Kysely<Database>({ dialect: new ClosedAwarePGliteDialect(pglite) });
}
