/**
 * An unreachable or hung database answers 503 (`unavailable`) at every door, whatever the
 * driver calls its error; a read past its time limit 504 (`deadline_exceeded`); anything else is
 * a 500 with a correlation id.
 */
import { MongoNetworkError, MongoServerError } from 'mongodb';
import { normaliseError } from '../../src/app/errors';
import { createLogger } from '../../src/app/logger';
import { DeadlineExceeded, InternalError, Unavailable } from '../../src/core/errors';

const log = createLogger('silent');
/** A driver error as the driver names it (some have no public constructor). */
const named = (name: string) => Object.defineProperty(new Error('x'), 'name', { value: name });

it.each([
  ['a network error', new MongoNetworkError('connection reset')],
  ['no server to select', named('MongoServerSelectionError')],
  ['a pool cleared because the database stopped answering (PoolClearedOnNetworkError)', named('PoolClearedOnNetworkError')],
  ['a pool cleared', named('MongoPoolClearedError')],
  ['a pool closed', named('MongoPoolClosedError')],
  ['a server closed', named('MongoServerClosedError')],
  ['a wait for a connection that timed out', named('MongoWaitQueueTimeoutError')],
])('%s is unavailable (503)', (_name, err) => {
  expect(normaliseError(err, log)).toBeInstanceOf(Unavailable);
});

it.each([
  ['an operation past its client time limit (timeoutMS)', named('MongoOperationTimeoutError')],
  ['an operation stopped by the server at maxTimeMS', new MongoServerError({ message: 'operation exceeded time limit', code: 50 })],
])('%s is deadline_exceeded (504): an analyst query asked for too much', (_name, err) => {
  expect(normaliseError(err, log)).toBeInstanceOf(DeadlineExceeded);
});

it('anything else is internal (500), with a correlation id', () => {
  const e = normaliseError(new MongoServerError({ message: 'boom', code: 2 }), log);
  expect(e).toBeInstanceOf(InternalError);
  expect((e as InternalError).correlationId).toEqual(expect.any(String));
});
