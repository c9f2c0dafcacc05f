/**
 * The store speaks the core's errors: what the MongoDB driver throws is translated here, at the
 * boundary of every repository the core is given (see `translatingErrors`), so that nothing above
 * the store knows the driver's error names. An unreachable database becomes `Unavailable`, an
 * operation stopped at its time limit `DeadlineExceeded`; the driver's error is kept as `cause`
 * for the log. Anything else passes unchanged (the doors answer it as an internal error).
 */
import { types } from 'node:util';
import { DeadlineExceeded, DomainError, Unavailable } from '../core/errors';

/**
 * Whether `err` is an Error, whatever realm made it: a socket's error is made by Node's own, and
 * where Rampart runs in another (a test runner's sandbox) `instanceof Error` answers false for it.
 */
const isError = (err: unknown): err is Error => err instanceof Error || types.isNativeError(err);

/**
 * Server error codes that mean "not now, try again": a replica set between primaries (a step-down
 * or an election: NotWritablePrimary 10107, NotPrimaryNoSecondaryOk 13435, NotPrimaryOrSecondary
 * 13436, InterruptedDueToReplStateChange 11602, PrimarySteppedDown 189), a server shutting down
 * (ShutdownInProgress 91, InterruptedAtShutdown 11600) or one it could not reach (HostUnreachable
 * 6, HostNotFound 7, NetworkTimeout 89, SocketException 9001). The driver retries a single-document
 * write once on these; a multi-document write (a purge's deleteMany) is not retried, and must not
 * surface as an internal error either.
 */
const TRANSIENT_CODES: ReadonlySet<number> = new Set([
  6, 7, 89, 91, 189, 9001, 10107, 11600, 11602, 13435, 13436,
]);

/** Errors that mean the database cannot be reached, or cannot take this operation now (a failover). */
export function isUnavailableError(err: unknown): boolean {
  if (!isError(err)) return false;
  // PoolClearedOnNetworkError (a database that stopped answering) is the one not named Mongo…;
  // a pool closed, a server closed or a wait for a connection that timed out are outages too.
  if (
    /^(Mongo(ServerSelection|Network|NetworkTimeout|TopologyClosed|NotConnected|PoolCleared|PoolClosed|ServerClosed|WaitQueueTimeout)Error|PoolClearedOnNetworkError)$/.test(
      err.name,
    )
  )
    return true;
  // A bulk write (insertMany, bulkWrite) cut by the connection closing: the driver throws a bulk
  // write error with no write error of its own, carrying the network error's fields (the
  // `ResetPool` label, `beforeHandshake`) and message (`connection … closed`, `write EPIPE`, …).
  if (err.name === 'MongoBulkWriteError' && cutByNetwork(err)) return true;
  // The socket's own error, now and then passed on unwrapped when the database dies under a write
  // (seen: `write EPIPE` from an insertMany as FerretDB was killed).
  if (socketError(err)) return true;
  const code = (err as { code?: unknown }).code;
  return err.name.startsWith('Mongo') && typeof code === 'number' && TRANSIENT_CODES.has(code);
}

/** Node's error for a socket the other end closed or refused: an outage, however it reached us. */
const SOCKET_CODES: ReadonlySet<string> = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED']);
const SOCKET_CALLS: ReadonlySet<string> = new Set(['write', 'read', 'connect']);
function socketError(err: Error): boolean {
  const e = err as { code?: unknown; syscall?: unknown };
  return (
    typeof e.code === 'string' &&
    SOCKET_CODES.has(e.code) &&
    typeof e.syscall === 'string' &&
    SOCKET_CALLS.has(e.syscall)
  );
}

function cutByNetwork(err: Error): boolean {
  const e = err as {
    writeErrors?: unknown;
    errorLabelSet?: { has?(label: string): boolean };
    beforeHandshake?: unknown;
  };
  const own = Array.isArray(e.writeErrors) ? e.writeErrors.length : e.writeErrors ? 1 : 0;
  return (
    own === 0 && (e.errorLabelSet?.has?.('ResetPool') === true || typeof e.beforeHandshake === 'boolean')
  );
}

/** An operation stopped at its time limit (the server's `maxTimeMS`, code 50, or the driver's own timeout). */
export function isTimeLimitError(err: unknown): boolean {
  if (!isError(err)) return false;
  return err.name === 'MongoOperationTimeoutError' || (err as { code?: unknown }).code === 50;
}

/** The core's error for a driver error, or the error itself when it has no meaning to the core. */
export function translateDriverError(err: unknown): unknown {
  if (err instanceof DomainError) return err;
  // An analyst read past its time limit (RAMPART_ANALYST_TIMEOUT_MS): narrow the query.
  if (isTimeLimitError(err))
    return new DeadlineExceeded(
      'the query ran past its time limit: narrow its filter (a time range) or ask for less',
      { cause: err },
    );
  if (isUnavailableError(err)) return new Unavailable(undefined, { cause: err });
  return err;
}

const isThenable = (v: unknown): v is PromiseLike<unknown> =>
  typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';

/**
 * The repository as the core receives it: every method call (synchronous or returning a promise)
 * rejects with the core's errors instead of the driver's. Properties and getters read through.
 *
 * Not a Proxy: a verdict makes dozens of repository calls, and a Proxy's trap runs on every
 * property read. The wrapper is made once, an object whose prototype is the repository (so its
 * fields read through) with a wrapped copy of each of its methods and a getter for each of its
 * getters (evaluated on the repository itself).
 */
export function translatingErrors<T extends object>(repository: T): T {
  const wrapper = Object.create(repository) as Record<PropertyKey, unknown>;
  const done = new Set<PropertyKey>(['constructor']);
  for (
    let proto: object | null = repository;
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto) as object | null
  ) {
    for (const prop of Reflect.ownKeys(proto)) {
      if (done.has(prop)) continue;
      done.add(prop);
      const descriptor = Object.getOwnPropertyDescriptor(proto, prop) as PropertyDescriptor;
      if (descriptor.get || descriptor.set) {
        Object.defineProperty(wrapper, prop, {
          get: () => Reflect.get(repository, prop, repository) as unknown,
          ...(descriptor.set ? { set: (v: unknown) => Reflect.set(repository, prop, v, repository) } : {}),
          enumerable: descriptor.enumerable ?? false,
        });
        continue;
      }
      if (typeof descriptor.value !== 'function') continue;
      const method = descriptor.value as (...args: unknown[]) => unknown;
      wrapper[prop] = function translated(...args: unknown[]): unknown {
        let result: unknown;
        try {
          result = method.apply(repository, args);
        } catch (err) {
          throw translateDriverError(err);
        }
        return result instanceof Promise
          ? result.then(undefined, rethrowTranslated)
          : isThenable(result)
            ? Promise.resolve(result).then(undefined, rethrowTranslated)
            : result;
      };
    }
  }
  return wrapper as T;
}

const rethrowTranslated = (err: unknown): never => {
  throw translateDriverError(err);
};
