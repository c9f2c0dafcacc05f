/**
 * Turns anything thrown below a door into a DomainError. Domain errors pass through: the store
 * has already translated its driver's errors (an unreachable database is `unavailable`, a read
 * past its time limit `deadline_exceeded`; see store/errors.ts), and such an outage is logged with
 * its cause here. Anything else becomes `internal` with a correlation id that is logged with the
 * cause and returned to the caller without internals.
 */
import { randomUUID } from 'node:crypto';
import { DomainError, InternalError } from '../core/errors';
import type { Logger } from './logger';

export function normaliseError(err: unknown, log: Logger): DomainError {
  if (err instanceof DomainError) {
    if (err.kind === 'unavailable' && err.cause !== undefined) log.error({ err: err.cause }, 'database unavailable');
    return err;
  }
  const correlationId = randomUUID();
  log.error({ err, correlationId }, 'internal error');
  return new InternalError(correlationId);
}
