/** `businesses`: each listed business's full profile (operation 3, `type=all`). */
import type { z } from 'zod';
import {
  type BusinessFull,
  businessShape,
  getBusinessFull,
  recordOf,
  recordSchemaOf,
} from '../api/index.ts';
import { defineStream } from './descriptor.ts';
import { account } from './record-fields.ts';

/** The Airbyte record: the profile's shape (`businessShape`) under its account. */
export const businessRecord = recordSchemaOf(businessShape, { account });

export function businessRecordOf(name: string, b: BusinessFull): z.infer<typeof businessRecord> {
  return { account: name, ...recordOf(businessShape, b) };
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
  // (src/warehouse/write/held-removals.ts, `holdsBusinessList`), not a removal of this read.
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
