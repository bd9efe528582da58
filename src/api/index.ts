/**
 * The upstream client: one function per operation, and what they need and return. Each
 * operation module exports its functions and its records' types (the schema's output),
 * one line here each; `types.ts` carries what several modules share.
 */

export type { Credential } from '../config/index.ts';
export {
  archiveBusiness,
  type BusinessBasic,
  type BusinessCreated,
  type BusinessFull,
  type BusinessHoursDay,
  type BusinessHoursEntry,
  type BusinessInput,
  type BusinessSummary,
  type BusinessUpdated,
  businessShape,
  businessSummaryShape,
  createBusiness,
  getBusiness,
  getBusinessFull,
  listBusinesses,
  updateBusiness,
  WEEKDAYS,
  type Weekday,
} from './businesses.ts';
export {
  type AnswerSettings,
  type ApiClient,
  type ApiClientOptions,
  type ApiStats,
  answerSettings,
  apiStats,
  type CallOptions,
  createApiClient,
  upstreamNow,
} from './client.ts';
export {
  addKeyword,
  deleteKeyword,
  type Keyword,
  keywordShape,
  listKeywords,
} from './keywords.ts';
export { type Listing, listingShape, listListings } from './listings.ts';
export { getRankings, type RankObservation, rankObservationShape } from './rankings.ts';
export {
  type AnyShape,
  type Column,
  type ColumnsOf,
  column,
  columns,
  columnTypesOf,
  derivedColumn,
  describeShape,
  isRecordShape,
  type RecordOf,
  type RecordSchemaParts,
  type RecordShape,
  type RowOf,
  type RowSqlOf,
  recordOf,
  recordSchemaOf,
  recordSchemaParts,
  recordShape,
  rowOf,
  type SqlType,
  type ValueOf,
} from './record-shape.ts';
export {
  type Country,
  countryShape,
  listCountries,
  listStates,
  listSubCategories,
  type State,
  type SubCategory,
  stateShape,
  subCategoryShape,
} from './reference.ts';
export {
  getResponseStatus,
  listReviews,
  type ResponseSubmitted,
  type Review,
  type ReviewResponse,
  respondToReview,
  reviewResponseShape,
  reviewShape,
} from './reviews.ts';
export {
  API_ERROR_CODES,
  ApiError,
  type ApiErrorCode,
  isApiError,
  isValidationCode,
  OPERATIONS,
  type OperationName,
} from './transport/errors.ts';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './transport/retry.ts';
export type * from './types.ts';
export {
  KNOWN_REVIEW_TYPES,
  LISTING_STATUSES,
  LISTING_SYNC_STATUSES,
  RESPONSE_REQUEST_STATUSES,
} from './types.ts';
