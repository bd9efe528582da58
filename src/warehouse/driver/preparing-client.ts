/**
 * The pg client every PostgreSQL warehouse's pool uses: named prepared statements for the
 * texts that repeat, and `COPY … FROM STDIN` for bulk rows (docs/benchmarks.md).
 */
import { finished } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { QUERY_READ_TIMEOUT } from './database-errors.ts';
import { StatementNames } from './statement-names.ts';

/**
 * `copy <table> (<columns>) from stdin`, sent through Kysely with its rows (COPY's text
 * format) as the one parameter: `copyRows` in bulk-write.ts. Kysely has no other way to a
 * transaction's own connection, and the COPY must run in the business's transaction.
 */
const COPY_FROM_STDIN = /^copy [^;]+ from stdin$/;

/**
 * A pg client that runs repeated parameterised statements as named prepared ones, and
 * a `COPY … FROM STDIN` given its rows as the one parameter (`copyFromStdin`).
 */
class PreparingClient extends pg.Client {
  /**
   * The connection's socket, as the pool's `stream` factory (a public option of pg's
   * client) made it: what a COPY given up on cuts (below).
   */
  readonly #socket: { destroy(error?: Error): void } | undefined;

  constructor(config?: pg.ClientConfig) {
    let socket: { destroy(error?: Error): void } | undefined;
    const stream = config?.stream;
    super(
      typeof stream === 'function'
        ? {
            ...config,
            stream: () => {
              const made = stream();
              socket = made;
              return made;
            },
          }
        : config,
    );
    this.#socket = socket;
  }

  /** The pool's names (set on the pool's own subclass, `preparingClientOf`). */
  protected get statementNames(): StatementNames {
    throw new Error('PreparingClient is used through preparingClientOf()');
  }

  // biome-ignore lint/suspicious/noExplicitAny: pg's query() is a dozen overloads
  override query(...args: any[]): any {
    const [text, values, callback] = args;
    if (
      typeof text === 'string' &&
      Array.isArray(values) &&
      values.length > 0 &&
      callback === undefined
    ) {
      if (values.length === 1 && typeof values[0] === 'string' && COPY_FROM_STDIN.test(text)) {
        return this.#copyFromStdin(text, values[0]);
      }
      const name = this.statementNames.nameOf(text);
      if (name !== undefined) return super.query({ name, text, values });
    }
    // biome-ignore lint/suspicious/noExplicitAny: as above
    return (super.query as any)(...args);
  }

  /**
   * One `COPY … FROM STDIN` through pg-copy-streams: the statement, then (once the server
   * answers CopyInResponse) the whole payload as one CopyData message and CopyDone. It
   * settles at ReadyForQuery, or with the server's error (a unique violation, 23505, that
   * the caller answers by writing its business again without COPY: warehouse/write/snapshot.ts).
   * pg's `query_timeout` covers it as any query: the stream offers the callback that pg
   * wraps with its timer, and fails with pg's "Query read timeout".
   */
  async #copyFromStdin(text: string, payload: string): Promise<pg.QueryResult> {
    const copy = super.query(copyFrom(text));
    // pg tells the stream of a connection lost after it settled too (below): heard, ignored.
    copy.on('error', () => {});
    copy.end(payload);
    try {
      await finished(copy);
    } catch (error) {
      if (error instanceof Error && QUERY_READ_TIMEOUT.test(error.message)) {
        // pg leaves a query it gave up on in flight, and the stream would act on an answer
        // that came late (its CopyInResponse) with its connection already let go: a
        // TypeError thrown in the socket's reader, which ends the process. So the
        // connection is cut, with this error, and the pool replaces it. Cut once the
        // transaction's rollback is queued behind the COPY, so that the rollback fails
        // with this error too: Kysely reports the rollback's error, and this one names
        // the bound (describeDatabaseError).
        const socket = this.#socket;
        setImmediate(() => socket?.destroy(error));
        // Until then the pool must not lend it again: a query queued behind the abandoned
        // COPY would wait for it and then fail with this error. Released with an error
        // (pg-pool's documented `release(err)`), the pool drops the client instead of
        // keeping it idle; the pool sets `release` on each checkout, so this lasts until
        // that one ends.
        const checkout = this as unknown as { release?: (error?: unknown) => void };
        const release = checkout.release;
        if (release) checkout.release = (reason?: unknown) => release(reason || error);
      }
      throw error;
    }
    return { command: 'COPY', rowCount: copy.rowCount, rows: [], oid: 0, fields: [] };
  }
}

/** The client class of one pool: a PreparingClient with the pool's own statement names. */
export function preparingClientOf(): typeof PreparingClient {
  const names = new StatementNames();
  return class extends PreparingClient {
    protected override get statementNames(): StatementNames {
      return names;
    }
  };
}
