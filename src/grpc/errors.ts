/**
 * The gRPC door's one table from the core's error kinds to gRPC status codes, and the trailers
 * every error carries: `rampart-error-type` (the same type REST puts in its body), the standard
 * rich error model in `grpc-status-details-bin` (google.rpc.ErrorInfo, BadRequest with each
 * offending field, RetryInfo), `retry-after` on rate limits, `rampart-reason` on a refusal that
 * names its rule and `rampart-correlation-id` on internal errors. Internal errors carry nothing but the correlation id.
 */
import { Metadata, status as Status, type StatusObject } from '@grpc/grpc-js';
import {
  DomainError,
  Forbidden,
  InternalError,
  InvalidParameters,
  InvalidRequestToken,
  retryAfterOf,
  type ErrorKind,
} from '../core/errors';
import { encodeStatusDetails, ERROR_DOMAIN, STATUS_DETAILS_KEY, type FieldViolation } from './status-details';
import type { CallError } from './generated/rampart/v1/CallError';

export const GRPC_STATUS: Readonly<Record<ErrorKind, Status>> = {
  bad_request: Status.INVALID_ARGUMENT,
  unauthorized: Status.UNAUTHENTICATED,
  forbidden: Status.PERMISSION_DENIED,
  not_found: Status.NOT_FOUND,
  payload_too_large: Status.INVALID_ARGUMENT,
  invalid_parameters: Status.INVALID_ARGUMENT,
  invalid_request_token: Status.INVALID_ARGUMENT,
  rate_limited: Status.RESOURCE_EXHAUSTED,
  unavailable: Status.UNAVAILABLE,
  deadline_exceeded: Status.DEADLINE_EXCEEDED,
  internal: Status.INTERNAL,
};

export const ERROR_TYPE_KEY = 'rampart-error-type';
export const CORRELATION_ID_KEY = 'rampart-correlation-id';
export const RETRY_AFTER_KEY = 'retry-after';
/** On PERMISSION_DENIED, why the call was refused (REST's 403 `reason`: `environment_disabled`, …). */
export const REASON_KEY = 'rampart-reason';

/** The offending fields of an error (request-message paths: the event command names them so). */
function violations(e: DomainError): FieldViolation[] {
  if (e instanceof InvalidParameters)
    return e.fields.map((f) => ({ field: f.field, description: f.message }));
  if (e instanceof InvalidRequestToken) return [{ field: e.field, description: e.message }];
  if (e.kind === 'payload_too_large') return [{ field: '(message)', description: e.message }];
  return [];
}

/** The status (code, message, trailers) to answer for a domain error. */
export function toStatus(
  e: DomainError,
): Partial<StatusObject> & { code: Status; details: string; metadata: Metadata } {
  const code = GRPC_STATUS[e.kind];
  const metadata = new Metadata();
  metadata.set(ERROR_TYPE_KEY, e.type);
  const info: Record<string, string> = { type: e.type };
  if (e instanceof InternalError) {
    metadata.set(CORRELATION_ID_KEY, e.correlationId);
    info.correlation_id = e.correlationId;
  }
  if (e instanceof Forbidden && e.reason) {
    metadata.set(REASON_KEY, e.reason);
    info.reason = e.reason;
  }
  let retryDelaySeconds: number | null = null;
  const retryAfter = retryAfterOf(e);
  if (retryAfter !== null) {
    retryDelaySeconds = retryAfter;
    metadata.set(RETRY_AFTER_KEY, String(retryAfter));
  }
  const fieldViolations = violations(e);
  const details =
    fieldViolations.length > 0 && e instanceof InvalidParameters
      ? fieldViolations.map((f) => `${f.field}: ${f.description}`).join('; ')
      : e.message;
  metadata.set(
    STATUS_DETAILS_KEY,
    encodeStatusDetails({
      code,
      message: details,
      fieldViolations,
      errorInfo: { reason: e.type.toUpperCase(), domain: ERROR_DOMAIN, metadata: info },
      retryDelaySeconds,
    }),
  );
  return { code, details, metadata };
}

/** The same status as the in-band error of a stream's call (VerdictStream): code, message, details bytes, the other trailers. */
export function callError(status: ReturnType<typeof toStatus>): CallError {
  const metadata: Record<string, string> = {};
  let details: Buffer | undefined;
  for (const [key, value] of Object.entries(status.metadata.getMap())) {
    if (key === STATUS_DETAILS_KEY) details = Buffer.isBuffer(value) ? value : undefined;
    else if (typeof value === 'string') metadata[key] = value;
  }
  return { code: status.code, message: status.details, details: details ?? Buffer.alloc(0), metadata };
}

/** A field that proto3 cannot mark required (the path parameters of the REST routes). */
export function required(field: string, value: string): string {
  if (!value) throw new InvalidParameters([{ field, message: 'is required' }]);
  return value;
}
