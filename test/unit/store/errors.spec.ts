/** Which driver errors the core sees as Unavailable (503, UNAVAILABLE): outages and failovers, nothing else. */
import { runInNewContext } from 'node:vm';
import { isUnavailableError, translateDriverError } from '../../../src/store/errors';
import { Unavailable } from '../../../src/core/errors';

const driverError = (name: string, code?: number) =>
  Object.assign(new Error(name), { name, ...(code === undefined ? {} : { code }) });

it.each([
  ['a server that cannot be selected', driverError('MongoServerSelectionError'), true],
  ['a network error', driverError('MongoNetworkError'), true],
  ['a pool cleared after a network error', driverError('PoolClearedOnNetworkError'), true],
  ['a step-down: NotWritablePrimary', driverError('MongoServerError', 10107), true],
  ['an election: InterruptedDueToReplStateChange', driverError('MongoServerError', 11602), true],
  ['a primary stepped down', driverError('MongoServerError', 189), true],
  ['a bulk write cut by a step-down', driverError('MongoBulkWriteError', 10107), true],
  ['a server shutting down', driverError('MongoServerError', 91), true],
  [
    'a bulk write cut by the connection closing (ResetPool)',
    Object.assign(driverError('MongoBulkWriteError'), {
      message: 'write EPIPE',
      code: 'EPIPE',
      writeErrors: [],
      errorLabelSet: new Set(['ResetPool']),
    }),
    true,
  ],
  [
    'a bulk write cut before its handshake',
    Object.assign(driverError('MongoBulkWriteError'), {
      message: 'connect ECONNREFUSED',
      writeErrors: [],
      errorLabelSet: new Set(),
      beforeHandshake: true,
    }),
    true,
  ],
  [
    'a bulk write with a duplicate key',
    Object.assign(driverError('MongoBulkWriteError', 11000), {
      writeErrors: [{ index: 0, code: 11000 }],
      errorLabelSet: new Set(),
    }),
    false,
  ],
  [
    'the socket closed under a write, unwrapped',
    Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' }),
    true,
  ],
  [
    // Made by another realm than the one testing it, as Node's socket errors are under a test
    // runner's sandbox (seen: a list import failed on `write EPIPE` as FerretDB was killed).
    'the socket closed under a write, unwrapped, from another realm',
    runInNewContext(
      "Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' })",
    ) as unknown,
    true,
  ],
  [
    'a connection refused, unwrapped',
    Object.assign(new Error('connect ECONNREFUSED /tmp/x.sock'), {
      code: 'ECONNREFUSED',
      syscall: 'connect',
    }),
    true,
  ],
  [
    'a file that cannot be opened',
    Object.assign(new Error('ENOENT'), { code: 'ENOENT', syscall: 'open' }),
    false,
  ],
  ['a socket code without a socket call', Object.assign(new Error('EPIPE'), { code: 'EPIPE' }), false],
  ['a duplicate key', driverError('MongoServerError', 11000), false],
  ['a bad query', driverError('MongoServerError', 2), false],
  ['a time limit', driverError('MongoServerError', 50), false],
  ['an error of ours with a code', driverError('TypeError', 10107), false],
  ['not an error', 'NotWritablePrimary', false],
])('%s: unavailable %s', (_what, err, unavailable) => {
  expect(isUnavailableError(err)).toBe(unavailable);
  expect(translateDriverError(err) instanceof Unavailable).toBe(unavailable);
});
