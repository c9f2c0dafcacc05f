/**
 * Domain errors. They know no protocol: each adapter (REST, gRPC, GraphQL) maps `kind` through
 * one table of its own. Messages are safe to show to API callers; internals never go in them.
 */

export type ErrorKind =
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'payload_too_large'
  | 'invalid_parameters'
  | 'invalid_request_token'
  | 'rate_limited'
  | 'unavailable'
  | 'deadline_exceeded'
  | 'internal';

export const ERROR_KINDS: readonly ErrorKind[] = [
  'bad_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'payload_too_large',
  'invalid_parameters',
  'invalid_request_token',
  'rate_limited',
  'unavailable',
  'deadline_exceeded',
  'internal',
];

/** One offending field of a request, named by its JSON path (e.g. `context.ip`). */
export interface FieldProblem {
  field: string;
  message: string;
}

export abstract class DomainError extends Error {
  abstract readonly kind: ErrorKind;
  /** Castle-compatible error `type`; defaults to the kind. */
  get type(): string {
    return this.kind;
  }
}

export class BadRequest extends DomainError {
  readonly kind = 'bad_request';
}
export class Unauthorized extends DomainError {
  readonly kind = 'unauthorized';
  constructor(message = 'missing or invalid API secret') {
    super(message);
  }
}
/** Why a call is forbidden, as the REST body's `reason` says it (docs/client.md, docs/mobile.md). */
export type ForbiddenReason =
  | 'environment_disabled'
  | 'read_only_key'
  | 'origin_not_allowed'
  | 'no_origins_listed'
  | 'app_not_allowed'
  | 'no_apps_listed';

export class Forbidden extends DomainError {
  readonly kind = 'forbidden';
  /** `reason`: a stable code for the cause, where a caller can act on it. */
  constructor(
    message: string,
    readonly reason?: ForbiddenReason,
  ) {
    super(message);
  }
}
export class NotFound extends DomainError {
  readonly kind = 'not_found';
}
export class RouteNotFound extends NotFound {
  override get type(): string {
    return 'route_not_found';
  }
}
export class PayloadTooLarge extends DomainError {
  readonly kind = 'payload_too_large';
}
export class InvalidParameters extends DomainError {
  readonly kind = 'invalid_parameters';
  constructor(readonly fields: FieldProblem[]) {
    super(fields.map((f) => `${f.field}: ${f.message}`).join('; ') || 'invalid parameters');
  }
}
export class InvalidRequestToken extends DomainError {
  readonly kind = 'invalid_request_token';
  /** The request field that carried the token (`request_token` or `context.client_id`). */
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`${field} ${detail}`);
  }
}
export class RateLimited extends DomainError {
  readonly kind = 'rate_limited';
  /** `message`: what the limit is and which setting raises it, where the limiter says so. */
  constructor(
    readonly retryAfterSeconds: number,
    message = 'rate limit exceeded, retry later',
  ) {
    super(message);
  }
}
/** `cause`: what the store saw (a driver error), for the log only; never shown to callers. */
export class Unavailable extends DomainError {
  readonly kind = 'unavailable';
  /** When to try again (every door says it: REST `Retry-After`, gRPC `retry-after` and RetryInfo, GraphQL). */
  readonly retryAfterSeconds: number;
  constructor(
    message = 'the database is unreachable',
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(message, options);
    this.retryAfterSeconds = options?.retryAfterSeconds ?? 1;
  }
}

/** Seconds a refused caller should wait before trying again, for the errors that say so (429, 503). */
export function retryAfterOf(e: DomainError): number | null {
  return e instanceof RateLimited || e instanceof Unavailable ? e.retryAfterSeconds : null;
}
export class DeadlineExceeded extends DomainError {
  readonly kind = 'deadline_exceeded';
  constructor(message = 'deadline exceeded', options?: { cause?: unknown }) {
    super(message, options);
  }
}
export class InternalError extends DomainError {
  readonly kind = 'internal';
  constructor(readonly correlationId: string) {
    super(`internal error (correlation id ${correlationId})`);
  }
}
