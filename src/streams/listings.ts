/** `listings`: each business's directory listings (operation 7). */
import { z } from 'zod';
import {
  LISTING_STATUSES,
  LISTING_SYNC_STATUSES,
  type Listing,
  type ListResult,
  listListings,
} from '../api/index.ts';
import { defineStream } from './descriptor.ts';
import { account, maybeText, text } from './record-fields.ts';

export const listingRecord = z
  .object({
    account,
    business_id: z.int(),
    id: z.int(),
    site_name: text,
    status: z.enum(LISTING_STATUSES),
    sync_status: z.enum(LISTING_SYNC_STATUSES).nullable(),
    order_status: maybeText,
    name: maybeText,
    name_valid: z.boolean().nullable(),
    phone: maybeText,
    phone_valid: z.boolean().nullable(),
    street: maybeText,
    city: maybeText,
    state: maybeText,
    postal_code: maybeText,
    address_valid: z.boolean().nullable(),
    live_link: maybeText,
    claimed: z.boolean().nullable(),
    has_site_credentials: z
      .boolean()
      .describe(
        'whether the directory login is set; the login and password never leave the client',
      ),
  })
  .strict();

export function listingRecordOf(
  name: string,
  businessId: number,
  l: Listing,
): z.infer<typeof listingRecord> {
  return {
    account: name,
    business_id: businessId,
    id: l.id,
    site_name: l.siteName,
    status: l.status,
    sync_status: l.syncStatus,
    order_status: l.orderStatus,
    name: l.name,
    name_valid: l.nameValid,
    phone: l.phone,
    phone_valid: l.phoneValid,
    street: l.street,
    city: l.city,
    state: l.state,
    postal_code: l.postalCode,
    address_valid: l.addressValid,
    live_link: l.liveLink,
    claimed: l.claimed,
    has_site_credentials: l.hasSiteCredentials,
  };
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
  writer: {
    module: 'src/warehouse/listings.ts',
    tables: ['listings', 'listing_status_history', 'listing_accuracy_days'],
  },
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
