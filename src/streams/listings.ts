/** `listings`: each business's directory listings (operation 7). */
import { z } from 'zod';
import {
  type Listing,
  type ListResult,
  listingShape,
  listListings,
  recordOf,
  recordSchemaOf,
} from '../api/index.ts';
import { defineStream } from './descriptor.ts';
import { account } from './record-fields.ts';

/** The Airbyte record: the listing's shape (`listingShape`) under its account and business. */
export const listingRecord = recordSchemaOf(listingShape, { account, business_id: z.int() });

export function listingRecordOf(
  name: string,
  businessId: number,
  l: Listing,
): z.infer<typeof listingRecord> {
  return { account: name, business_id: businessId, ...recordOf(listingShape, l) };
}

export const listings = defineStream({
  name: 'listings',
  description: "each business's listings on the directories, and their status history",
  scope: 'business',
  reads: [
    {
      read: 'listings',
      operation: 'list_listings',
      fetch: (api, credential, id, options) => listListings(api, credential, id, options),
    },
  ],
  // `listing_accuracy_days`: a row per UTC day.
  daily: true,
  bounds: ['LISTINGS_MAX_LISTINGS_PER_ANSWER'],
  removals: 'held-on-volume-drop',
  replay: 'business-reads',
  catalog: [
    {
      name: 'listings',
      schema: listingRecord,
      primaryKey: [['account'], ['business_id'], ['id']],
      perBusiness: {
        read: 'listings',
        records: (account, id, answer: ListResult<Listing>) =>
          answer.records.map((l) => listingRecordOf(account, id, l)),
      },
    },
  ],
});
