/** The REST door's one table from error kind to HTTP status and Castle error `type`. */
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

/** Castle's `type` for each kind (server_error and service_unavailable follow decisions.md). */
export const HTTP_TYPE: Readonly<Record<ErrorKind, string>> = {
  bad_request: 'bad_request',
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  not_found: 'not_found',
  payload_too_large: 'payload_too_large',
  invalid_parameters: 'invalid_parameters',
  invalid_request_token: 'invalid_request_token',
  rate_limited: 'rate_limited',
  unavailable: 'service_unavailable',
  deadline_exceeded: 'deadline_exceeded',
  internal: 'server_error',
};
