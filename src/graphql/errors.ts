/**
 * The GraphQL door's one table from error kind to `extensions.code` (and, for errors that stop a
 * whole request before execution, its HTTP status), and the error formatter: domain errors keep
 * their safe message, anything else becomes `INTERNAL_SERVER_ERROR` with a logged correlation id.
 */
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { HeaderMap } from '@apollo/server';
import {
  DomainError,
  Forbidden,
  InternalError,
  InvalidParameters,
  retryAfterOf,
  type ErrorKind,
} from '../core/errors';
import { normaliseError } from '../doors/errors';
import type { Logger } from '../doors/logger';

export const GRAPHQL_ERRORS: Readonly<Record<ErrorKind, { code: string; status: number }>> = {
  bad_request: { code: 'BAD_REQUEST', status: 400 },
  unauthorized: { code: 'UNAUTHENTICATED', status: 401 },
  forbidden: { code: 'FORBIDDEN', status: 403 },
  not_found: { code: 'NOT_FOUND', status: 404 },
  payload_too_large: { code: 'PAYLOAD_TOO_LARGE', status: 413 },
  invalid_parameters: { code: 'BAD_USER_INPUT', status: 422 },
  invalid_request_token: { code: 'INVALID_REQUEST_TOKEN', status: 422 },
  rate_limited: { code: 'RATE_LIMITED', status: 429 },
  unavailable: { code: 'SERVICE_UNAVAILABLE', status: 503 },
  deadline_exceeded: { code: 'DEADLINE_EXCEEDED', status: 504 },
  internal: { code: 'INTERNAL_SERVER_ERROR', status: 500 },
};

/** The extensions a domain error carries: its code, its Castle `type`, and its details (a refusal's `reason`). */
export function extensionsOf(e: DomainError): Record<string, unknown> {
  const ext: Record<string, unknown> = { code: GRAPHQL_ERRORS[e.kind].code, type: e.type };
  if (e instanceof InvalidParameters) ext.fields = e.fields;
  if (e instanceof InternalError) ext.correlationId = e.correlationId;
  if (e instanceof Forbidden && e.reason) ext.reason = e.reason;
  const retryAfter = retryAfterOf(e);
  if (retryAfter !== null) ext.retryAfterSeconds = retryAfter;
  return ext;
}

/**
 * An error that answers the whole request (authentication, refused operation, limits) with the
 * kind's HTTP status; `extra` adds details such as the limit that was hit.
 */
export function requestError(e: DomainError, extra: Record<string, unknown> = {}): GraphQLError {
  const headers = new HeaderMap();
  const retryAfter = retryAfterOf(e);
  if (retryAfter !== null) headers.set('retry-after', String(retryAfter));
  return new GraphQLError(e.message, {
    extensions: { ...extensionsOf(e), ...extra, http: { status: GRAPHQL_ERRORS[e.kind].status, headers } },
  });
}

/** Apollo `formatError`: never a stack trace, never an internal message. */
export function formatError(log: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    const cause = original instanceof GraphQLError ? original.originalError : original;
    if (cause === undefined || cause === null || cause instanceof GraphQLError) {
      // GraphQL's own errors (syntax, validation, variables) and the request errors above.
      const { stacktrace: _stack, ...extensions } = formatted.extensions ?? {};
      return { ...formatted, extensions };
    }
    const e = normaliseError(cause, log);
    return {
      message: e.message,
      ...(formatted.locations ? { locations: formatted.locations } : {}),
      ...(formatted.path ? { path: formatted.path } : {}),
      extensions: extensionsOf(e),
    };
  };
}
