/** The REST door's one table from error kind to Castle error `type`; the HTTP status is the one every HTTP door shares. */
import type { ErrorKind } from '../core/errors';
import { HTTP_STATUS } from '../doors/http-status';

export { HTTP_STATUS };

/** Castle's `type` for each kind (server_error and service_unavailable follow docs/decisions.md). */
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
