/**
 * The one owner rule's order (docs/warehouse.md, "Rules as implemented", "Ids under two
 * businesses"): an id two businesses' answers carry on the same night goes to the lower
 * business id, whatever order their reads end in, live and in replay alike. The
 * businesses of a credential are read side by side and each writes as soon as it can,
 * except that one whose answers carry an id a lower business's answers also carry first
 * waits for that business's write to end. So it
 * waits on the claims of the lower businesses (the ids of their reviews, responses and
 * keywords, known once those reads end, before their other reads do), never on a slow
 * read of another stream, and on a write only when an id is shared.
 */

/** The ids a business's answers carry, namespaced: `review:<uuid>`, `response:<uuid>`, `keyword:<id>`. */
export type Claims = ReadonlySet<string>;

const NONE: Claims = new Set();

export class WriteOrder {
  readonly #index = new Map<number, number>();
  readonly #ids: readonly number[];
  readonly #claims: PromiseWithResolvers<Claims>[];
  readonly #done: PromiseWithResolvers<void>[];

  /** `businessIds`: the credential's businesses of the run, in the order they start. */
  constructor(businessIds: readonly number[]) {
    this.#ids = businessIds;
    for (const [i, id] of businessIds.entries()) this.#index.set(id, i);
    this.#claims = businessIds.map(() => Promise.withResolvers<Claims>());
    this.#done = businessIds.map(() => Promise.withResolvers<void>());
  }

  /** The business's claims are known (its reviews and keywords reads ended). */
  claim(businessId: number, claims: Claims): void {
    const i = this.#index.get(businessId);
    if (i !== undefined) this.#claims[i]?.resolve(claims);
  }

  /** The business is done (written, failed or skipped): whoever waits on it goes on. */
  finish(businessId: number): void {
    const i = this.#index.get(businessId);
    if (i === undefined) return;
    this.#claims[i]?.resolve(NONE);
    this.#done[i]?.resolve();
  }

  /**
   * Waits until every lower business that claims one of `claims` is done; and, to know,
   * until every lower business's claims are. `waiting` is called once, before the first
   * wait that has to wait.
   */
  async turn(businessId: number, claims: Claims, waiting: (on: number) => void): Promise<void> {
    const mine = this.#index.get(businessId);
    if (mine === undefined || claims.size === 0) return;
    let said = false;
    const wait = async <T>(promise: Promise<T>, on: number): Promise<T> => {
      if (!said && (await isPending(promise))) {
        said = true;
        waiting(on);
      }
      return promise;
    };
    for (let k = 0; k < mine; k++) {
      const other = this.#ids[k] as number;
      const theirs = await wait((this.#claims[k] as PromiseWithResolvers<Claims>).promise, other);
      if (!overlaps(claims, theirs)) continue;
      await wait((this.#done[k] as PromiseWithResolvers<void>).promise, other);
    }
  }
}

function overlaps(a: Claims, b: Claims): boolean {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const id of small) if (large.has(id)) return true;
  return false;
}

async function isPending(promise: Promise<unknown>): Promise<boolean> {
  const pending = Symbol('pending');
  return (await Promise.race([promise, Promise.resolve(pending)])) === pending;
}
