/**
 * Turns anything thrown below a door into a DomainError. Domain errors pass through: the store
 * has already translated its driver's errors (an unreachable database is `unavailable`, a read
 * past its time limit `deadline_exceeded`; see store/errors.ts), and such an outage is logged with
 * its cause here. Anything else becomes `internal` with a correlation id that is logged with the
 * cause and returned to the caller without internals.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import {
  BadRequest,
  DomainError,
  Forbidden,
  InternalError,
  InvalidParameters,
  PayloadTooLarge,
  retryAfterOf,
  type ErrorKind,
} from '../core/errors';
import { HTTP_STATUS } from './http-status';
import type { Logger } from './logger';

export function normaliseError(err: unknown, log: Logger): DomainError {
  if (err instanceof DomainError) {
    if (err.kind === 'unavailable' && err.cause !== undefined)
      log.error({ err: err.cause }, 'database unavailable');
    return err;
  }
  const correlationId = randomUUID();
  log.error({ err, correlationId }, 'internal error');
  return new InternalError(correlationId);
}

/** How one HTTP door words its errors (see sendHttpError). */
export interface HttpErrorStyle {
  /** The body's `type` of each kind, where the error names no type of its own (default: the error's own `type`). */
  types?: Readonly<Record<ErrorKind, string>>;
  /** Return an internal error's correlation id as `correlation_id` (the REST door does). */
  correlationId?: boolean;
  /** Headers every error answer carries (the console's `cache-control: no-store`). */
  headers?: Readonly<Record<string, string>>;
}

/**
 * The one error answer of the doors served over HTTP (REST, the console): the status of the
 * error's kind (doors/http-status.ts), a `{type, message}` JSON body with the invalid fields
 * when there are (and a refusal's `reason`), and `Retry-After` for a rate limit or an outage.
 */
export function sendHttpError(
  reply: FastifyReply,
  err: unknown,
  log: Logger,
  style: HttpErrorStyle = {},
): FastifyReply {
  const e = normaliseError(err, log);
  const body: Record<string, unknown> = {
    type: style.types && e.type === e.kind ? style.types[e.kind] : e.type,
    message: e.message,
  };
  if (e instanceof InvalidParameters) body.fields = e.fields;
  if (style.correlationId && e instanceof InternalError) body.correlation_id = e.correlationId;
  if (e instanceof Forbidden && e.reason) body.reason = e.reason;
  const retryAfter = retryAfterOf(e);
  if (retryAfter !== null) reply.header('Retry-After', String(retryAfter));
  reply.code(HTTP_STATUS[e.kind]).header('content-type', 'application/json; charset=utf-8');
  for (const [name, value] of Object.entries(style.headers ?? {})) reply.header(name, value);
  return reply.send(body);
}

/**
 * The error handler of a Fastify context whose errors answer through sendHttpError: whatever a
 * route's hooks or handler throw, and what Fastify itself refuses while reading the body (a body
 * over the route's limit is `payload_too_large`, a content type no parser takes or a body that
 * cannot be read `bad_request`).
 */
export function httpErrorHandler(log: Logger, style: HttpErrorStyle = {}) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply): void => {
    sendHttpError(reply, fromFramework(err, req), log, style);
  };
}

function fromFramework(err: FastifyError, req: FastifyRequest): unknown {
  if (err instanceof DomainError) return err;
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || err.statusCode === 413)
    return new PayloadTooLarge(
      `request body is larger than ${req.routeOptions?.bodyLimit ?? req.server.initialConfig.bodyLimit} bytes`,
    );
  if (
    err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ||
    (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)
  )
    return new BadRequest(err.message);
  return err;
}
