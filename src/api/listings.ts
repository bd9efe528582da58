/** Listings: operation 7 (docs/upstream.md, "Operations"). */
import { z } from 'zod';
import { type ApiClient, type CallOptions, callUpstream, idSegment } from './client.ts';
import { listingSchema, parseRecords } from './schemas.ts';
import type { Credential, Listing, ListResult } from './types.ts';

const listingList = z.array(z.unknown());

/**
 * A business's listings on the directories, each validated on its own. The directory
 * login and password never leave the schema: only `hasSiteCredentials` does.
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
      parse: (result) => parseRecords(listingSchema, listingList.parse(result), (i) => `[${i}]`),
    },
    opts,
  );
}
