/** The HTTP status of each error kind, alike on every door served over HTTP (REST, the console). */
import type { ErrorKind } from '../core/errors';

export const HTTP_STATUS: Readonly<Record<ErrorKind, number>> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  payload_too_large: 413,
  invalid_parameters: 422,
  invalid_request_token: 422,
  rate_limited: 429,
  unavailable: 503,
  deadline_exceeded: 504,
  internal: 500,
};
