/** Listings: operation 7 of docs/upstream.md. */
import { z } from 'zod';
import { boundedList, parseUniqueRecords } from './bounds.ts';
import { type BusinessRead, businessRead } from './client.ts';
import { columns as c, column, recordShape } from './record-shape.ts';
import { flag, id, indexedString, liveLink, text } from './schemas.ts';
import { LISTING_STATUSES, LISTING_SYNC_STATUSES, type ListResult } from './types.ts';

function isNonEmptyString(value: unknown): boolean {
  return typeof value === 'string' && value.trim() !== '';
}

export const listingSchema = z.compile(
  z
    .object({
      id,
      // Read only to learn whether a login is set; never copied to the output.
      site_username: z.unknown().optional(),
      site_password: z.unknown().optional(),
      sync_status: z
        .enum(LISTING_SYNC_STATUSES)
        .nullish()
        .transform((value) => value ?? null),
      order_status: text,
      name: text,
      name_valid: flag,
      phone: text,
      phone_valid: flag,
      street: text,
      city: text,
      state: text,
      postal_code: text,
      address_valid: flag,
      live_link: liveLink,
      claimed: flag,
      site_name: indexedString.min(1),
      status: z.enum(LISTING_STATUSES),
    })
    .transform((raw) => ({
      id: raw.id,
      siteName: raw.site_name,
      status: raw.status,
      syncStatus: raw.sync_status,
      orderStatus: raw.order_status,
      name: raw.name,
      nameValid: raw.name_valid,
      phone: raw.phone,
      phoneValid: raw.phone_valid,
      street: raw.street,
      city: raw.city,
      state: raw.state,
      postalCode: raw.postal_code,
      addressValid: raw.address_valid,
      liveLink: raw.live_link,
      claimed: raw.claimed,
      /** Whether a directory login or password is set; neither goes past the schema. */
      hasSiteCredentials:
        isNonEmptyString(raw.site_username) || isNonEmptyString(raw.site_password),
    })),
);
/** A listing. The directory login and password are dropped: only whether any are set survives. */
export type Listing = z.output<typeof listingSchema>;

/** A listing's columns (src/api/record-shape.ts): `listings` and the Airbyte record. */
export const listingShape = recordShape<Listing>()({
  id: c.id.as('listing_id'),
  siteName: c.text,
  status: c.oneOf(LISTING_STATUSES),
  syncStatus: c.maybeOneOf(LISTING_SYNC_STATUSES),
  orderStatus: c.maybeText,
  name: c.maybeText,
  nameValid: c.flag,
  phone: c.maybeText,
  phoneValid: c.flag,
  street: c.maybeText,
  city: c.maybeText,
  state: c.maybeText,
  postalCode: c.maybeText,
  addressValid: c.flag,
  liveLink: c.maybeText,
  claimed: c.flag,
  hasSiteCredentials: column(
    'boolean',
    z
      .boolean()
      .describe(
        'whether the directory login is set; the login and password never leave the client',
      ),
  ),
});

/**
 * A business's listings on the directories, each validated on its own. The directory
 * login and password never leave the schema: only `hasSiteCredentials` does. More than
 * `listingsPerAnswer` refuses the answer (TOO_MANY_RECORDS); the same listing id twice
 * collapses when the copies agree and is refused when they do not.
 */
export const listListings: BusinessRead<ListResult<Listing>> = businessRead(
  'list_listings',
  '/listings',
  (result, _body, bounds) =>
    parseUniqueRecords(
      listingSchema,
      boundedList(result, bounds, 'listingsPerAnswer', 'listings'),
      'listing',
    ),
);
