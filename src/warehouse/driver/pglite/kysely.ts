/**
 * The Kysely instance of an embedded (PGlite) warehouse: Kysely's PGlite driver, with the
 * statements a transaction repeats run as named prepared statements.
 *
 * PGlite's `query()` sends each statement as six protocol messages, each a call into the
 * WebAssembly backend (parse, describe, bind, describe, execute, sync), and the backend
 * parses and plans it every time. A night writes each business in one transaction with
 * the same few dozen statement texts (docs/benchmarks.md, "The first run"): inside a
 * transaction, a text seen before (`StatementNames`, as on PostgreSQL) is parsed once
 * under a name, and then runs as one message buffer (bind, describe, execute, sync), one
 * call into the backend. Everything else (statements without parameters, statements
 * outside a transaction, texts seen once) goes through `query()` as before. Only PGlite's
 * public API is used: its protocol serializer and result parser, `execProtocolStream` and
 * `runExclusive`, the lock `query()` takes inside a transaction. As on PostgreSQL, a named
 * statement goes through the plan cache: after five runs the backend may keep a generic
 * plan where `query()` planned each run with its values.
 */
import { type PGlite, parse, protocol } from '@electric-sql/pglite';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  PGliteDialect,
  PGliteDriver,
  type QueryResult,
} from 'kysely';
import type { Database } from '../../database.ts';
import { StatementNames } from '../statement-names.ts';

const { serialize } = protocol;

/**
 * The errors of a named statement the session cannot run again under its name: 26000, no
 * such prepared statement; 0A000, a cached plan whose result type changed.
 */
const LOST: ReadonlySet<string> = new Set(['26000', '0A000']);

/** Protocol messages as one buffer: the backend reads them in one call. */
const messages = (...parts: Uint8Array[]): Uint8Array => Buffer.concat(parts);

/** Drivers opened in this process: each names its statements apart (`StatementNames`). */
let drivers = 0;

/**
 * One embedded warehouse's named statements: their names and parameter types. The
 * session is this driver's: a `DISCARD ALL` or `DEALLOCATE` by anyone else leaves names
 * here that the backend no longer knows (test/helpers/pglite-pool.ts opens a new Kysely
 * after its own).
 */
class NamedStatements {
  readonly #pglite: PGlite;
  readonly #names = new StatementNames(`lsp${++drivers}_`);
  /** Parsed in the backend's session: a statement's name → its parameters' type OIDs. */
  readonly #parsed = new Map<string, number[]>();
  /**
   * Texts the session could no longer run under their name (`LOST`): they go through
   * `query()` from then on.
   */
  readonly #lost = new Set<string>();

  constructor(pglite: PGlite) {
    this.#pglite = pglite;
  }

  /** The name `query` runs under, or undefined to run it through `query()`. */
  nameOf(query: CompiledQuery): string | undefined {
    if (query.parameters.length === 0 || this.#lost.has(query.sql)) return undefined;
    return this.#names.nameOf(query.sql);
  }

  /**
   * Runs `query` under `name`, parsing it first if the session has not. The Sync at the
   * end of each buffer returns the backend to its idle (or failed-transaction) state
   * whatever the statement did, as `query()`'s own does.
   */
  run(name: string, query: CompiledQuery): Promise<QueryResult<unknown>> {
    const pglite = this.#pglite;
    return pglite.runExclusive(async () => {
      let types = this.#parsed.get(name);
      if (types === undefined) {
        const described = await pglite.execProtocolStream(
          messages(
            serialize.parse({ name, text: query.sql }),
            serialize.describe({ type: 'S', name }),
            serialize.sync(),
          ),
          { syncToFs: false },
        );
        types = parse.parseDescribeStatementResults(described);
        this.#parsed.set(name, types);
      }
      const values = query.parameters.map((value, i) => {
        if (value === null || value === undefined) return null;
        const serializer = pglite.serializers[types[i] ?? 0];
        return serializer ? serializer(value) : String(value);
      });
      let answer: Awaited<ReturnType<PGlite['execProtocolStream']>>;
      try {
        answer = await pglite.execProtocolStream(
          messages(
            serialize.bind({ statement: name, values }),
            serialize.describe({ type: 'P' }),
            serialize.execute({}),
            serialize.sync(),
          ),
          { syncToFs: false },
        );
      } catch (error) {
        // The statement failed, and its transaction with it, as under `query()`. One the
        // session lost (a DISCARD or DEALLOCATE by another user of the instance) or whose
        // plan no longer fits its tables (a column added under a `returning *`) would fail
        // again: its text goes through `query()` from now on.
        const code = (error as { code?: unknown } | null)?.code;
        if (typeof code === 'string' && LOST.has(code)) {
          this.#parsed.delete(name);
          this.#lost.add(query.sql);
        }
        throw error;
      }
      const [result] = parse.parseResults(answer, pglite.parsers, { rowMode: 'object' });
      return {
        rows: result?.rows ?? [],
        numAffectedRows:
          result?.affectedRows === undefined ? undefined : BigInt(result.affectedRows),
      };
    });
  }
}

/** Kysely's own PGlite connection, as its driver's methods take it. */
type KyselyConnection = Parameters<PGliteDriver['beginTransaction']>[0];

/**
 * Kysely's PGlite driver begins a transaction inside PGlite's own `transaction()` and
 * waits for its callback to start: on a closed instance that call rejects before the
 * callback runs, so the wait never ends and the rejection goes unheard (the process's
 * unhandled rejection). A closed warehouse fails the transaction instead, as a closed
 * pg pool does. Its one connection is handed out wrapped, so that a statement of an open
 * transaction can run as a named one (`NamedStatements`).
 */
class EmbeddedDriver extends PGliteDriver {
  readonly #pglite: PGlite;
  readonly #statements: NamedStatements;
  /** Kysely's connection and the wrapper handed out for it (the driver has one). */
  #inner: KyselyConnection | undefined;
  #wrapped: DatabaseConnection | undefined;
  /** PGlite's `transaction()` is open: statements run in it, under its query lock. */
  #inTransaction = false;

  constructor(pglite: PGlite) {
    super({ pglite });
    this.#pglite = pglite;
    this.#statements = new NamedStatements(pglite);
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const inner = (await super.acquireConnection()) as KyselyConnection;
    if (this.#inner !== inner || this.#wrapped === undefined) {
      this.#inner = inner;
      this.#wrapped = {
        executeQuery: <R>(query: CompiledQuery) => {
          const name = this.#inTransaction ? this.#statements.nameOf(query) : undefined;
          return (
            name === undefined ? inner.executeQuery(query) : this.#statements.run(name, query)
          ) as Promise<QueryResult<R>>;
        },
        // Kysely's PGlite connection streams nothing (it throws): as it does.
        streamQuery: () => inner.streamQuery(),
      };
    }
    return this.#wrapped;
  }

  /** Kysely's own connection behind a wrapper this driver handed out. */
  #innerOf(connection: DatabaseConnection): KyselyConnection {
    return (
      connection === this.#wrapped && this.#inner ? this.#inner : connection
    ) as KyselyConnection;
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.#pglite.closed) throw new Error('PGlite is closed');
    await super.beginTransaction(this.#innerOf(connection));
    this.#inTransaction = true;
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await super.commitTransaction(this.#innerOf(connection));
    } finally {
      this.#inTransaction = false;
    }
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await super.rollbackTransaction(this.#innerOf(connection));
    } finally {
      this.#inTransaction = false;
    }
  }
}

class EmbeddedDialect extends PGliteDialect {
  readonly #pglite: PGlite;
  constructor(pglite: PGlite) {
    super({ pglite });
    this.#pglite = pglite;
  }
  override createDriver(): Driver {
    return new EmbeddedDriver(this.#pglite);
  }
}

/** The Kysely instance of an open PGlite, as every embedded warehouse has it. */
export function pgliteKysely(pglite: PGlite): Kysely<Database> {
  return new Kysely<Database>({ dialect: new EmbeddedDialect(pglite) });
}
