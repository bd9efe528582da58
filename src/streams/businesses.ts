/** `businesses`: each listed business's full profile (operation 3, `type=all`). */
import { z } from 'zod';
import { type BusinessFull, getBusinessFull } from '../api/index.ts';
import { defineStream } from './descriptor.ts';
import { account, maybeText, text } from './record-fields.ts';

export const businessRecord = z
  .object({
    account,
    id: z.int(),
    name: text,
    street: maybeText,
    city: maybeText,
    state_name: maybeText,
    postal_code: maybeText,
    phone: maybeText,
    latitude: z.number().nullable(),
    longitude: z.number().nullable(),
    biz_url: maybeText,
    owner_first_name: maybeText,
    owner_last_name: maybeText,
    facebook_url: maybeText,
    twitter_url: maybeText,
    description: maybeText,
    tagline: maybeText,
    storecode: maybeText,
    additional_categories: z.array(text),
    business_hours: z.array(
      z.object({ day: text, start_time: maybeText, end_time: maybeText }).strict(),
    ),
    hide_address: z.boolean().nullable(),
  })
  .strict();

export function businessRecordOf(name: string, b: BusinessFull): z.infer<typeof businessRecord> {
  return {
    account: name,
    id: b.id,
    name: b.name,
    street: b.street,
    city: b.city,
    state_name: b.stateName,
    postal_code: b.postalCode,
    phone: b.phone,
    latitude: b.latitude,
    longitude: b.longitude,
    biz_url: b.bizUrl,
    owner_first_name: b.ownerFirstName,
    owner_last_name: b.ownerLastName,
    facebook_url: b.facebookUrl,
    twitter_url: b.twitterUrl,
    description: b.description,
    tagline: b.tagline,
    storecode: b.storecode,
    additional_categories: b.additionalCategories,
    business_hours: b.businessHours.map((h) => ({
      day: h.day,
      start_time: h.startTime,
      end_time: h.endTime,
    })),
    hide_address: b.hideAddress,
  };
}

export const businesses = defineStream({
  name: 'businesses',
  description: 'the full profile of each listed business (the list itself is always read)',
  scope: 'business',
  reads: [
    {
      read: 'business',
      operation: 'get_business_full',
      fetch: (api, credential, id, options) => getBusinessFull(api, credential, id, options),
    },
  ],
  daily: false,
  bounds: [],
  // Archiving (a business that leaves the list) is the list's, guarded per account
  // (src/warehouse/held-removals.ts, `holdsBusinessList`), not a removal of this read.
  removals: 'none',
  replay: 'business-reads',
  catalog: [
    {
      name: 'businesses',
      schema: businessRecord,
      primaryKey: [['account'], ['id']],
      perBusiness: {
        read: 'business',
        records: (account, _id, business: BusinessFull) => [businessRecordOf(account, business)],
      },
    },
  ],
});
