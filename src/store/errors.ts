/**
 * The store speaks the core's errors: what the MongoDB driver throws is translated here, at the
 * boundary of every repository the core is given (see `translatingErrors`), so that nothing above
 * the store knows the driver's error names. An unreachable database becomes `Unavailable`, an
 * operation stopped at its time limit `DeadlineExceeded`; the driver's error is kept as `cause`
 * for the log. Anything else passes unchanged (the doors answer it as an internal error).
 */
import { DeadlineExceeded, DomainError, Unavailable } from '../core/errors';

/** Errors that mean the database cannot be reached. */
export function isUnavailableError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  // PoolClearedOnNetworkError (a database that stopped answering) is the one not named Mongo…;
  // a pool closed, a server closed or a wait for a connection that timed out are outages too.
  return /^(Mongo(ServerSelection|Network|NetworkTimeout|TopologyClosed|NotConnected|PoolCleared|PoolClosed|ServerClosed|WaitQueueTimeout)Error|PoolClearedOnNetworkError)$/.test(err.name);
}

/** An operation stopped at its time limit (the server's `maxTimeMS`, code 50, or the driver's own timeout). */
export function isTimeLimitError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return err.name === 'MongoOperationTimeoutError' || (err as { code?: unknown }).code === 50;
}

/** The core's error for a driver error, or the error itself when it has no meaning to the core. */
export function translateDriverError(err: unknown): unknown {
  if (err instanceof DomainError) return err;
  // An analyst read past its time limit (RAMPART_ANALYST_TIMEOUT_MS): narrow the query.
  if (isTimeLimitError(err)) return new DeadlineExceeded('the query ran past its time limit: narrow its filter (a time range) or ask for less', { cause: err });
  if (isUnavailableError(err)) return new Unavailable(undefined, { cause: err });
  return err;
}

const isThenable = (v: unknown): v is PromiseLike<unknown> => typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';

/**
 * The repository as the core receives it: every method call (synchronous or returning a promise)
 * rejects with the core's errors instead of the driver's. Properties and getters read through.
 */
export function translatingErrors<T extends object>(repository: T): T {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(repository, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      let fn = wrapped.get(prop);
      if (!fn) {
        const method = value as (...args: unknown[]) => unknown;
        fn = (...args: unknown[]): unknown => {
          let result: unknown;
          try {
            result = method.apply(target, args);
          } catch (err) {
            throw translateDriverError(err);
          }
          return isThenable(result)
            ? Promise.resolve(result).catch((err: unknown) => {
                throw translateDriverError(err);
              })
            : result;
        };
        wrapped.set(prop, fn);
      }
      return fn;
    },
  });
}
