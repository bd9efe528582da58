/**
 * Which statement texts run as named prepared statements, on PostgreSQL
 * (preparing-client.ts) and on PGlite (pglite/kysely.ts).
 */

/**
 * Named prepared statements: PostgreSQL parses and plans an unnamed statement every time
 * it runs, and the sync runs the same few dozen statement texts for every business (about
 * 20 per business in a first sync, 2 for a business whose answers all read as applied;
 * docs/benchmarks.md). A statement with parameters whose text was seen before runs under a name,
 * so each connection parses it once (PGlite too, whose one session parses and plans each
 * statement its `query()` is given). The names are bounded: a text seen once is only
 * remembered (in a set cleared when full), and past `MAX_NAMED_STATEMENTS` texts the rest
 * run unnamed, so statements whose text varies cannot grow the server's memory.
 * Statements without parameters (migrations' DDL, multi-statement scripts) never do.
 */
const MAX_NAMED_STATEMENTS = 200;
const MAX_SEEN_ONCE = 2000;

/**
 * The names of one pool's statements (or one embedded warehouse's: pglite/kysely.ts). Per
 * pool, not per process: a process that opens several warehouses (replay's scratch schema
 * beside the live one, `warehouse copy`'s two, a test run's many) gives each its own
 * budget, so one cannot use up another's names.
 */
export class StatementNames {
  readonly #names = new Map<string, string>();
  readonly #seenOnce = new Set<string>();
  readonly #prefix: string;

  /** `prefix` starts every name: two users of one session must not share names. */
  constructor(prefix = 'ls_') {
    this.#prefix = prefix;
  }

  nameOf(text: string): string | undefined {
    const name = this.#names.get(text);
    if (name !== undefined || this.#names.size >= MAX_NAMED_STATEMENTS) return name;
    if (!this.#seenOnce.has(text)) {
      if (this.#seenOnce.size >= MAX_SEEN_ONCE) this.#seenOnce.clear();
      this.#seenOnce.add(text);
      return undefined;
    }
    this.#seenOnce.delete(text);
    const named = `${this.#prefix}${this.#names.size + 1}`;
    this.#names.set(text, named);
    return named;
  }
}
