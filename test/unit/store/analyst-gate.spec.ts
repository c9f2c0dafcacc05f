/**
 * The analysts' gate: reads run at most `concurrency` at a time in arrival order, each holds its
 * place for a rest in proportion to how long it ran (so analyst reads hold the database at most
 * `share` of the time), and a read that cannot start within `waitMs` fails with DeadlineExceeded.
 */
import { AnalystGate } from '../../../src/store/analyst-gate';
import { DeadlineExceeded } from '../../../src/core/errors';

/** A read that ends when told to. */
function deferred() {
  let end!: () => void;
  const done = new Promise<void>((resolve) => {
    end = resolve;
  });
  return { done, end };
}

it('runs one read at a time, in arrival order, each after the rest of the one before', async () => {
  let clock = 0;
  const gate = new AnalystGate({ concurrency: 1, share: 0.5, waitMs: 60_000, now: () => clock });
  const order: string[] = [];
  const first = deferred();
  const a = gate.run(async () => {
    order.push('a starts');
    await first.done;
    clock += 5; // it ran 5 ms: at share 0.5 the gate rests 5 ms more
    order.push('a ends');
  });
  const b = gate.run(async () => {
    order.push('b starts');
  });
  const c = gate.run(async () => {
    order.push('c starts');
  });
  await new Promise((r) => setImmediate(r));
  expect(gate.load).toEqual({ running: 1, waiting: 2 });
  first.end();
  await a;
  // a is over, but its place is held for its rest: b has not started yet.
  expect(order).toEqual(['a starts', 'a ends']);
  expect(gate.load).toEqual({ running: 1, waiting: 2 });
  await Promise.all([b, c]);
  expect(order).toEqual(['a starts', 'a ends', 'b starts', 'c starts']);
  expect(gate.load).toEqual({ running: 0, waiting: 0 });
});

it('lets `concurrency` reads run together, and a failed read frees its place', async () => {
  const gate = new AnalystGate({ concurrency: 2, share: 1, waitMs: 60_000 });
  const x = deferred();
  const y = deferred();
  const running = [gate.run(() => x.done), gate.run(() => y.done)];
  const third = gate.run(async () => 'third');
  await new Promise((r) => setImmediate(r));
  expect(gate.load).toEqual({ running: 2, waiting: 1 });
  x.end();
  y.end();
  await Promise.all(running);
  await expect(third).resolves.toBe('third');
  await expect(gate.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  expect(gate.load).toEqual({ running: 0, waiting: 0 });
});

it('fails a read that cannot start within waitMs with DeadlineExceeded, and forgets it', async () => {
  const gate = new AnalystGate({ concurrency: 1, share: 1, waitMs: 20 });
  const long = deferred();
  const holding = gate.run(() => long.done);
  await expect(gate.run(async () => 'never')).rejects.toBeInstanceOf(DeadlineExceeded);
  expect(gate.load).toEqual({ running: 1, waiting: 0 });
  long.end();
  await holding;
  await expect(gate.run(async () => 'now')).resolves.toBe('now');
});
