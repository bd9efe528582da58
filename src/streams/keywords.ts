/** `keywords`: the keywords each business tracks (operation 12). */
import type { z } from 'zod';
import {
  type Keyword,
  keywordShape,
  type ListResult,
  listKeywords,
  recordOf,
  recordSchemaOf,
} from '../api/index.ts';
import { defineStream } from './descriptor.ts';
import { account } from './record-fields.ts';

/** The Airbyte record: the keyword's shape (`keywordShape`) under its account. */
export const keywordRecord = recordSchemaOf(keywordShape, { account });

export function keywordRecordOf(name: string, k: Keyword): z.infer<typeof keywordRecord> {
  return { account: name, ...recordOf(keywordShape, k) };
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
  claims: (keyword: Keyword) => [`keyword:${keyword.id}`],
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
