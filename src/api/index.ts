/** The upstream client: one function per operation, and what they need and return. */
export {
  archiveBusiness,
  type BusinessHoursDay,
  type BusinessInput,
  createBusiness,
  getBusiness,
  getBusinessFull,
  listBusinesses,
  updateBusiness,
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
  API_ERROR_CODES,
  ApiError,
  type ApiErrorCode,
  isApiError,
  isValidationCode,
  OPERATIONS,
  type OperationName,
} from './errors.ts';
export { addKeyword, deleteKeyword, listKeywords } from './keywords.ts';
export { listListings } from './listings.ts';
export { getRankings } from './rankings.ts';
export { listCountries, listStates, listSubCategories } from './reference.ts';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.ts';
export { getResponseStatus, listReviews, respondToReview } from './reviews.ts';
export type * from './types.ts';
export {
  KNOWN_REVIEW_TYPES,
  LISTING_STATUSES,
  LISTING_SYNC_STATUSES,
  RESPONSE_REQUEST_STATUSES,
} from './types.ts';
