/**
 * Turns anything thrown below an adapter into a DomainError: domain errors pass through, an
 * unreachable database becomes `unavailable`, and everything else becomes `internal` with a
 * correlation id that is logged with the cause and returned to the caller without internals.
 */
import { randomUUID } from 'node:crypto';
import { DeadlineExceeded, DomainError, InternalError, Unavailable } from '../core/errors';
import { isTimeLimitError, isUnavailableError } from '../store/database';
import type { Logger } from './logger';

export function normaliseError(err: unknown, log: Logger): DomainError {
  if (err instanceof DomainError) return err;
  // An analyst read past its time limit (RAMPART_ANALYST_TIMEOUT_MS): narrow the query.
  if (isTimeLimitError(err)) return new DeadlineExceeded('the query ran past its time limit: narrow its filter (a time range) or ask for less');
  if (isUnavailableError(err)) {
    log.error({ err }, 'database unavailable');
    return new Unavailable();
  }
  const correlationId = randomUUID();
  log.error({ err, correlationId }, 'internal error');
  return new InternalError(correlationId);
}
