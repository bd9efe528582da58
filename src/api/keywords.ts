/** Keywords: operations 12, 13 and 14 of docs/upstream.md. */
import { z } from 'zod';
import type { Credential } from '../config/index.ts';
import { boundedList } from './bounds.ts';
import {
  type ApiClient,
  type BusinessRead,
  businessRead,
  type CallOptions,
  callUpstream,
  idSegment,
} from './client.ts';
import { columns as c, recordShape } from './record-shape.ts';
import { flag, id, indexedString, parseRecords, text } from './schemas.ts';
import type { ListResult } from './types.ts';

export const keywordSchema = z.compile(
  z
    .object({
      id,
      keyword: indexedString.min(1),
      city: text,
      state: text,
      primary: flag,
      location_id: id,
      archived: z
        .boolean()
        .nullish()
        .transform((value) => value ?? false),
    })
    .transform((raw) => ({
      id: raw.id,
      keyword: raw.keyword,
      city: raw.city,
      state: raw.state,
      primary: raw.primary,
      businessId: raw.location_id,
      archived: raw.archived,
    })),
);
export type Keyword = z.output<typeof keywordSchema>;

/**
 * A keyword's columns (src/api/record-shape.ts): `keywords` and the Airbyte record. Its
 * business is the record's; the row's `business_id` is the writing business's.
 */
export const keywordShape = recordShape<Keyword>()({
  id: c.id.as('keyword_id'),
  businessId: c.id.recordOnly(),
  keyword: c.text,
  city: c.maybeText,
  state: c.maybeText,
  primary: c.flag.as('is_primary'),
  archived: c.boolean,
});

/** Operation 14's answer: a confirmation sentence under `result`. */
export const deleteConfirmationSchema = z.string();

/** Operation 12: a business's keywords, each validated on its own. */
export const listKeywords: BusinessRead<ListResult<Keyword>> = businessRead(
  'list_keywords',
  '/keywords',
  (result, _body, bounds) =>
    parseRecords(keywordSchema, boundedList(result, bounds, 'keywordsPerBusiness', 'keywords')),
);

/** Operation 13: add a keyword (sent as JSON, as the upstream's own sample does). Never retried. */
export function addKeyword(
  api: ApiClient,
  cred: Credential,
  businessId: number,
  keyword: string,
  opts?: CallOptions,
): Promise<Keyword> {
  return callUpstream(
    api,
    cred,
    {
      operation: 'add_keyword',
      method: 'POST',
      path: `/businesses/${idSegment('businessId', businessId)}/add_keyword.json`,
      subject: `for business ${businessId}`,
      body: { keyword },
      parse: (result) => keywordSchema.parse(result),
    },
    opts,
  );
}

/** Operation 14: delete a keyword; the upstream answers with a confirmation sentence. */
export function deleteKeyword(
  api: ApiClient,
  cred: Credential,
  keywordId: number,
  opts?: CallOptions,
): Promise<{ message: string }> {
  return callUpstream(
    api,
    cred,
    {
      operation: 'delete_keyword',
      method: 'DELETE',
      path: `/keywords/${idSegment('keywordId', keywordId)}.json`,
      subject: `for keyword ${keywordId}`,
      parse: (result) => ({ message: deleteConfirmationSchema.parse(result) }),
    },
    opts,
  );
}
