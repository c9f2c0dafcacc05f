/**
 * Turns anything thrown below an adapter into a DomainError: domain errors pass through, an
 * unreachable database becomes `unavailable`, and everything else becomes `internal` with a
 * correlation id that is logged with the cause and returned to the caller without internals.
 */
import { randomUUID } from 'node:crypto';
import { DomainError, InternalError, Unavailable } from '../core/errors';
import { isUnavailableError } from '../store/database';
import type { Logger } from './logger';

export function normaliseError(err: unknown, log: Logger): DomainError {
  if (err instanceof DomainError) return err;
  if (isUnavailableError(err)) {
    log.error({ err }, 'database unavailable');
    return new Unavailable();
  }
  const correlationId = randomUUID();
  log.error({ err, correlationId }, 'internal error');
  return new InternalError(correlationId);
}
