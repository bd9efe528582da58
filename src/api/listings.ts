/** Listings: operation 7 of docs/upstream.md. */
import { z } from 'zod';
import { checkBound, parseUniqueRecords, SAMPLE_SIZE } from './bounds.ts';
import { type ApiClient, type CallOptions, callUpstream, idSegment } from './client.ts';
import { listingSchema } from './schemas.ts';
import type { Credential, Listing, ListResult } from './types.ts';

const listingList = z.array(z.unknown());

/**
 * A business's listings on the directories, each validated on its own. The directory
 * login and password never leave the schema: only `hasSiteCredentials` does. More than
 * `listingsPerAnswer` refuses the answer (TOO_MANY_RECORDS); the same listing id twice
 * collapses when the copies agree and is refused when they do not.
 */
export function listListings(
  api: ApiClient,
  cred: Credential,
  businessId: number,
  opts?: CallOptions,
): Promise<ListResult<Listing>> {
  return callUpstream(
    api,
    cred,
    {
      operation: 'list_listings',
      method: 'GET',
      path: `/businesses/${idSegment('businessId', businessId)}/listings.json`,
      subject: `for business ${businessId}`,
      parse: (result, _body, bounds) => {
        const items = listingList.parse(result);
        checkBound(bounds, 'listingsPerAnswer', items.length, 'listings', 'listings', () =>
          items.slice(0, SAMPLE_SIZE),
        );
        return parseUniqueRecords(listingSchema, items, (i) => `[${i}]`, 'listing');
      },
    },
    opts,
  );
}
