/** `keywords`: the keywords each business tracks (operation 12). */
import { z } from 'zod';
import { type Keyword, type ListResult, listKeywords } from '../api/index.ts';
import { defineStream } from './descriptor.ts';
import { account, maybeText, text } from './record-fields.ts';

export const keywordRecord = z
  .object({
    account,
    id: z.int(),
    business_id: z.int(),
    keyword: text,
    city: maybeText,
    state: maybeText,
    primary: z.boolean().nullable(),
    archived: z.boolean(),
  })
  .strict();

export function keywordRecordOf(name: string, k: Keyword): z.infer<typeof keywordRecord> {
  return {
    account: name,
    id: k.id,
    business_id: k.businessId,
    keyword: k.keyword,
    city: k.city,
    state: k.state,
    primary: k.primary,
    archived: k.archived,
  };
}

export const keywords = defineStream({
  name: 'keywords',
  description: 'the keywords each business tracks',
  scope: 'business',
  reads: [
    {
      read: 'keywords',
      operation: 'list_keywords',
      fetch: (api, credential, id, options) => listKeywords(api, credential, id, options),
    },
  ],
  daily: false,
  bounds: ['LISTINGS_MAX_KEYWORDS_PER_BUSINESS'],
  removals: 'held-on-volume-drop',
  replay: 'business-reads',
  catalog: [
    {
      name: 'keywords',
      schema: keywordRecord,
      primaryKey: [['account'], ['id']],
      perBusiness: {
        read: 'keywords',
        records: (account, _id, answer: ListResult<Keyword>) =>
          answer.records.map((k) => keywordRecordOf(account, k)),
      },
    },
  ],
});
