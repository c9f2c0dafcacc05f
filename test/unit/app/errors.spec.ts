/**
 * An unreachable or hung database answers 503 (`unavailable`) at every door, whatever the
 * driver calls its error; a read past its time limit 504 (`deadline_exceeded`); anything else is
 * a 500 with a correlation id. The store translates the driver's errors (store/errors.ts) at the
 * boundary of every repository; the doors' kit (doors/errors.ts) turns the rest into `internal`.
 */
import type * as Driver from 'mongodb';
import { normaliseError } from '../../../src/doors/errors';
import { createLogger } from '../../../src/app/logger';
import { DeadlineExceeded, InternalError, NotFound, Unavailable } from '../../../src/core/errors';
import { translateDriverError, translatingErrors } from '../../../src/store/errors';

// The driver's own error classes, from the driver's module that defines them: the whole driver
// would add a third of a second to this unit file's load, for nothing else it uses.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { MongoNetworkError, MongoServerError } = require('mongodb/lib/error') as Pick<
  typeof Driver,
  'MongoNetworkError' | 'MongoServerError'
>;
const log = createLogger('silent');
/** A driver error as the driver names it (some have no public constructor). */
const named = (name: string) => Object.defineProperty(new Error('x'), 'name', { value: name });

it.each([
  ['a network error', new MongoNetworkError('connection reset')],
  ['no server to select', named('MongoServerSelectionError')],
  [
    'a pool cleared because the database stopped answering (PoolClearedOnNetworkError)',
    named('PoolClearedOnNetworkError'),
  ],
  ['a pool cleared', named('MongoPoolClearedError')],
  ['a pool closed', named('MongoPoolClosedError')],
  ['a server closed', named('MongoServerClosedError')],
  ['a wait for a connection that timed out', named('MongoWaitQueueTimeoutError')],
])('%s is unavailable (503), the driver error kept as its cause', (_name, err) => {
  const e = translateDriverError(err);
  expect(e).toBeInstanceOf(Unavailable);
  expect((e as Unavailable).cause).toBe(err);
  expect(normaliseError(e, log)).toBe(e);
});

it.each([
  ['an operation past its client time limit (timeoutMS)', named('MongoOperationTimeoutError')],
  [
    'an operation stopped by the server at maxTimeMS',
    new MongoServerError({ message: 'operation exceeded time limit', code: 50 }),
  ],
])('%s is deadline_exceeded (504): an analyst query asked for too much', (_name, err) => {
  expect(translateDriverError(err)).toBeInstanceOf(DeadlineExceeded);
});

it('anything else is internal (500), with a correlation id', () => {
  const err = new MongoServerError({ message: 'boom', code: 2 });
  expect(translateDriverError(err)).toBe(err);
  const e = normaliseError(translateDriverError(err), log);
  expect(e).toBeInstanceOf(InternalError);
  expect((e as InternalError).correlationId).toEqual(expect.any(String));
});

describe('a repository given to the core', () => {
  class Repo {
    calls = 0;
    get size(): number {
      return this.calls;
    }
    async read(): Promise<string> {
      this.calls++;
      throw new MongoNetworkError('connection reset');
    }
    write(): void {
      this.calls++;
      throw named('MongoServerSelectionError');
    }
    async missing(): Promise<never> {
      throw new NotFound('no such thing');
    }
    ok(): number {
      return ++this.calls;
    }
  }

  it('rejects and throws the core errors, never the driver ones', async () => {
    const repo = translatingErrors(new Repo());
    await expect(repo.read()).rejects.toBeInstanceOf(Unavailable);
    expect(() => repo.write()).toThrow(Unavailable);
    await expect(repo.missing()).rejects.toBeInstanceOf(NotFound);
  });

  it('answers as the repository does otherwise, getters included', () => {
    const repo = translatingErrors(new Repo());
    expect(repo.ok()).toBe(1);
    expect(repo.size).toBe(1);
  });
});
