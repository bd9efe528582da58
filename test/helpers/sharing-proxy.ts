/**
 * A proxy in front of a real sandbox that rewrites its answers so that the same review and
 * keyword ids appear under two businesses (the sandbox never serves one id twice): the
 * owner rule's cases (docs/warehouse.md, "Ids under two businesses"). Everything else is
 * the sandbox's own answer over real HTTP, its `Date` header included.
 */
import { type Forward, startRewritingProxy } from './rewriting-proxy.ts';

/** `to`'s reviews (category `review`) and keywords answers also carry `from`'s first ones. */
export interface Share {
  from: number;
  to: number;
  reviews: number;
  keywords: number;
  /** `from`'s credential, when it is another account's: its answer is asked with it. */
  fromCredential?: { authToken: string; userEmail: string };
}

/** `business`'s keywords answer leaves out its first `count` keywords. */
export interface Drop {
  business: number;
  keywords: number;
}

export interface SharingState {
  shares: Share[];
  drops: Drop[];
  /**
   * While set, `business`'s reviews answers (and its keywords answers too, with
   * `keywords`) wait for `until` before they are sent.
   */
  hold: { business: number; until: Promise<void>; keywords?: boolean } | null;
  /** Businesses the business list leaves out (their next full run archives them). */
  unlisted: Set<number>;
  /** Every id served under a business it is not the sandbox's own, by kind. */
  carried: { reviews: Set<string>; keywords: Set<number> };
}

export function sharingState(): SharingState {
  return {
    shares: [],
    drops: [],
    hold: null,
    unlisted: new Set(),
    carried: { reviews: new Set(), keywords: new Set() },
  };
}

type Item = { id: string | number } & Record<string, unknown>;

const LIST = /^\/api\/v2\/businesses\/(\d+)\/(reviews|keywords)\.json(\?.*)?$/;
const BUSINESS_LIST = /^\/api\/v2\/businesses\.json(\?.*)?$/;

/** `url` asked with another credential's `auth_token` and `user_email`. */
function withCredential(url: string, credential: Share['fromCredential']): string {
  if (!credential) return url;
  const parsed = new URL(url, 'http://proxy');
  parsed.searchParams.set('auth_token', credential.authToken);
  parsed.searchParams.set('user_email', credential.userEmail);
  return `${parsed.pathname}${parsed.search}`;
}

export async function startSharingProxy(upstream: string, state: SharingState) {
  /** The items of an answer, and a way to put them back: reviews by site, keywords as a list. */
  const itemsOf = (json: { result: unknown }) => {
    if (Array.isArray(json.result)) {
      const list = json.result as Item[];
      return {
        items: list,
        set: (items: Item[]) => {
          json.result = items;
        },
      };
    }
    const sites = (json.result ?? {}) as Record<string, Item[]>;
    const items = Object.entries(sites).flatMap(([site, list]) =>
      list.map((item) => ({ ...item, __site: site })),
    );
    return {
      items: items as Item[],
      set: (next: Item[]) => {
        const out: Record<string, Item[]> = {};
        for (const { __site, ...item } of next as (Item & { __site: string })[]) {
          const site = out[__site] ?? [];
          site.push(item as Item);
          out[__site] = site;
        }
        json.result = out;
      },
    };
  };
  return startRewritingProxy(upstream, async (url, answer, served, forward: Forward) => {
    let text = served;
    const list = LIST.exec(url);
    const reviewCategory = list?.[2] === 'reviews' && /\bcategory=review\b/.test(url);
    if (list && answer.ok && (list[2] === 'keywords' || reviewCategory)) {
      const business = Number(list[1]);
      const kind = list[2] as 'reviews' | 'keywords';
      const json = JSON.parse(text) as { result: unknown };
      const own = itemsOf(json);
      let items = own.items;
      const drop = state.drops.find((d) => d.business === business);
      if (drop && kind === 'keywords') items = items.slice(drop.keywords);
      for (const share of state.shares.filter((s) => s.to === business)) {
        const count = kind === 'reviews' ? share.reviews : share.keywords;
        if (count === 0) continue;
        const from = await forward(
          withCredential(
            url.replace(`/businesses/${business}/`, `/businesses/${share.from}/`),
            share.fromCredential,
          ),
        );
        const theirs = itemsOf(JSON.parse(from.text) as { result: unknown }).items.slice(0, count);
        for (const item of theirs) {
          if (kind === 'reviews') state.carried.reviews.add(String(item.id));
          else state.carried.keywords.add(Number(item.id));
        }
        items = [...items, ...theirs];
      }
      own.set(items);
      text = JSON.stringify(json);
    }
    if (BUSINESS_LIST.test(url) && answer.ok && state.unlisted.size > 0) {
      const json = JSON.parse(text) as { result: unknown };
      if (Array.isArray(json.result)) {
        json.result = (json.result as Item[]).filter((b) => !state.unlisted.has(Number(b.id)));
        text = JSON.stringify(json);
      }
    }
    const hold = state.hold;
    const held = list?.[2] === 'reviews' || (hold?.keywords === true && list?.[2] === 'keywords');
    if (hold && held && Number(list?.[1]) === hold.business) await hold.until;
    return text;
  });
}
