/**
 * The one owner rule's order (docs/warehouse.md, "Rules as implemented", "Ids under two
 * businesses"): an id two businesses' answers carry on the same night goes to the lower
 * business id, whatever order their reads end in, live and in replay alike. The
 * businesses of a credential are read side by side and each writes as soon as it can,
 * except that one whose answers carry an id a lower business's answers also carry first
 * waits for that business's write to end. So it waits on the claims of the lower
 * businesses (the ids of their reviews, responses and keywords, known once those reads
 * end, before their other reads do), never on a slow read of another stream, and on a
 * write only when an id is shared.
 *
 * What it holds is bounded by the businesses in flight: an id is held under the lowest
 * business in flight that claims it, and let go when that business is done (the id is
 * then stored under it, or its write failed), since a later claimant then meets the
 * stored row, or nothing, whatever order it writes in.
 */

/** The ids a business's answers carry, namespaced: `review:<uuid>`, `response:<uuid>`, `keyword:<id>`. */
export type Claims = ReadonlySet<string>;

export class WriteOrder {
  readonly #index = new Map<number, number>();
  readonly #ids: readonly number[];
  /** Each business's claims, from when they are known until it is done. */
  readonly #claims: (Claims | undefined)[];
  readonly #registered: boolean[];
  /** Every business below this index has registered its claims (or is done). */
  #prefix = 0;
  readonly #waiters: { need: number; resolve: () => void }[] = [];
  /** Claimed id → the lowest business (by index) in flight that claims it. */
  readonly #lowest = new Map<string, number>();
  readonly #done: PromiseWithResolvers<void>[];

  /** `businessIds`: the credential's businesses of the run, in the order they start. */
  constructor(businessIds: readonly number[]) {
    this.#ids = businessIds;
    for (const [i, id] of businessIds.entries()) this.#index.set(id, i);
    this.#claims = businessIds.map(() => undefined);
    this.#registered = businessIds.map(() => false);
    this.#done = businessIds.map(() => Promise.withResolvers<void>());
  }

  /** The business's claims are known (its reviews and keywords reads ended). */
  claim(businessId: number, claims: Claims): void {
    const i = this.#index.get(businessId);
    if (i === undefined || this.#registered[i]) return;
    this.#claims[i] = claims;
    for (const id of claims) {
      const held = this.#lowest.get(id);
      if (held === undefined || i < held) this.#lowest.set(id, i);
    }
    this.#register(i);
  }

  /** The business is done (written, failed or skipped): whoever waits on it goes on. */
  finish(businessId: number): void {
    const i = this.#index.get(businessId);
    if (i === undefined) return;
    for (const id of this.#claims[i] ?? []) {
      if (this.#lowest.get(id) === i) this.#lowest.delete(id);
    }
    this.#claims[i] = undefined;
    this.#register(i);
    this.#done[i]?.resolve();
  }

  /**
   * Waits until every lower business has made its claims known, then until each lower
   * business that claims one of `claims` is done. `waiting` is called once, before the
   * first wait that has to wait.
   */
  async turn(businessId: number, claims: Claims, waiting: (on: number) => void): Promise<void> {
    const mine = this.#index.get(businessId);
    if (mine === undefined || claims.size === 0) return;
    let said = false;
    const say = (on: number) => {
      if (said) return;
      said = true;
      waiting(on);
    };
    if (this.#prefix < mine) {
      say(this.#ids[this.#prefix] as number);
      await new Promise<void>((resolve) => this.#waiters.push({ need: mine, resolve }));
    }
    const before = new Set<number>();
    for (const id of claims) {
      const held = this.#lowest.get(id);
      if (held !== undefined && held < mine) before.add(held);
    }
    for (const k of [...before].sort((x, y) => x - y)) {
      const done = (this.#done[k] as PromiseWithResolvers<void>).promise;
      if (await isPending(done)) say(this.#ids[k] as number);
      await done;
    }
  }

  #register(i: number): void {
    this.#registered[i] = true;
    while (this.#prefix < this.#registered.length && this.#registered[this.#prefix]) {
      this.#prefix += 1;
    }
    for (let w = this.#waiters.length - 1; w >= 0; w--) {
      const waiter = this.#waiters[w] as { need: number; resolve: () => void };
      if (waiter.need <= this.#prefix) {
        this.#waiters.splice(w, 1);
        waiter.resolve();
      }
    }
  }
}

async function isPending(promise: Promise<unknown>): Promise<boolean> {
  const pending = Symbol('pending');
  return (await Promise.race([promise, Promise.resolve(pending)])) === pending;
}
