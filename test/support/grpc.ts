/** gRPC test helpers shared by the e2e files. */
import { RampartError } from '../../src/client';

/** The RampartError a call fails with; fails the test when the call succeeds. */
export async function failure(p: Promise<unknown>): Promise<RampartError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof RampartError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}
