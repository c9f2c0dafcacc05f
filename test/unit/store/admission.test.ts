/**
 * The state layer's admission gate, on fake time and a fake backlog: work goes in at once below
 * the backpressure mark, is held while writes are behind until they catch up or its deadline, is
 * refused at its deadline while the database writes but stays past twice the mark, goes in at its
 * deadline while the database is down, and is refused outright past the queue limit or once closed.
 */
import { AdmissionGate, type Backlog } from '../../../src/store/state/admission';
import { Unavailable } from '../../../src/core/errors';
import { createFakeTime, type FakeTime } from '../../support/fakes/time';

let time: FakeTime;
/** The flusher as the gate sees it: `held` of the backlog are late changes held back on purpose. */
let writes: { backlog: number; held: number; failing: string | null } & Backlog;
let gate: AdmissionGate;

beforeEach(() => {
  time = createFakeTime();
  writes = {
    backlog: 0,
    held: 0,
    failing: null,
    get due() {
      return this.backlog - this.held;
    },
  };
  gate = new AdmissionGate(writes, { backpressureAt: 10, queueLimit: 100, now: () => time.clock.now().getTime(), scheduler: time.scheduler });
});

/** When `promise` settles: 'in', or the error it was refused with; 'held' while it has not. */
function outcome(promise: Promise<void>): { readonly is: 'held' | 'in' | Error } {
  const o: { is: 'held' | 'in' | Error } = { is: 'held' };
  promise.then(
    () => (o.is = 'in'),
    (err: Error) => (o.is = err),
  );
  return o;
}

const deadline = (ms: number) => time.clock.now().getTime() + ms;

it('lets work in at once below the mark, and work without a deadline even when behind', async () => {
  writes.backlog = 9;
  expect(gate.pressure).toBe('ok');
  await expect(gate.admit(deadline(1000))).resolves.toBeUndefined();
  writes.backlog = 50;
  expect(gate.pressure).toBe('behind');
  await expect(gate.admit()).resolves.toBeUndefined();
  expect(gate.waiting).toBe(0);
});

it('holds work while writes are behind and lets it in once a flush brought them under the mark', async () => {
  writes.backlog = 15;
  const held = outcome(gate.admit(deadline(1000)));
  await time.settle();
  expect(held.is).toBe('held');
  // A flush that left the backlog past the mark lets nothing in.
  writes.backlog = 12;
  gate.releaseHeld();
  await time.settle();
  expect(held.is).toBe('held');
  writes.backlog = 4;
  gate.releaseHeld();
  await time.settle();
  expect(held.is).toBe('in');
  // Its deadline's timer went with it.
  expect(time.pending).toBe(0);
});

it('at its deadline, lets held work in between the mark and twice it, and refuses it past twice the mark while the database writes', async () => {
  writes.backlog = 19;
  const near = outcome(gate.admit(deadline(100)));
  await time.advance(100);
  expect(near.is).toBe('in');

  writes.backlog = 20;
  const far = outcome(gate.admit(deadline(100)));
  await time.advance(99);
  expect(far.is).toBe('held');
  await time.advance(1);
  expect(far.is).toBeInstanceOf(Unavailable);
  expect((far.is as Error).message).toMatch(/database is behind \(20 writes waiting\)/);
  // A deadline already past is decided at once, the same way.
  await expect(gate.admit(deadline(0))).rejects.toBeInstanceOf(Unavailable);
  writes.backlog = 19;
  await expect(gate.admit(deadline(-1))).resolves.toBeUndefined();
});

it('lets held work in at its deadline while the database is down (its flushes fail), to ride the outage out', async () => {
  writes.backlog = 60;
  writes.failing = 'connection refused';
  const held = outcome(gate.admit(deadline(100)));
  await time.advance(100);
  expect(held.is).toBe('in');
  await expect(gate.admit(deadline(0))).resolves.toBeUndefined();
});

it('refuses work past the queue limit, saying why the flushes fail', async () => {
  writes.backlog = 100;
  expect(gate.pressure).toBe('full');
  await expect(gate.admit()).rejects.toThrow('the write queue is full (100 writes waiting)');
  writes.failing = 'connection refused';
  await expect(gate.admit(deadline(1000))).rejects.toThrow('the write queue is full (100 writes waiting; last error: connection refused)');
});

it('once closed, refuses new work and lets what it holds in after the next flush, even while behind', async () => {
  writes.backlog = 30;
  const held = outcome(gate.admit(deadline(1000)));
  gate.close();
  expect(gate.pressure).toBe('full');
  await expect(gate.admit()).rejects.toThrow('shutting down');
  await time.settle();
  expect(held.is).toBe('held');
  gate.releaseHeld();
  await time.settle();
  expect(held.is).toBe('in');
  expect(gate.waiting).toBe(0);
});

it('lets work in while only late changes are held back, but counts them against the queue bound', async () => {
  writes.backlog = 60;
  writes.held = 55;
  expect(gate.pressure).toBe('ok');
  await expect(gate.admit(deadline(1000))).resolves.toBeUndefined();
  expect(gate.waiting).toBe(0);
  writes.held = 0;
  expect(gate.pressure).toBe('behind');
  const held = outcome(gate.admit(deadline(1000)));
  await time.settle();
  expect(held.is).toBe('held');
  writes.backlog = 100;
  writes.held = 100;
  expect(gate.pressure).toBe('full');
  await expect(gate.admit(deadline(1000))).rejects.toThrow(/write queue is full \(100 writes waiting/);
});
