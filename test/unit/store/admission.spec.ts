/**
 * The state layer's admission gate, on fake time and a fake backlog: what is not written yet is
 * bounded by age. Work goes in at once while the oldest unwritten change is young, is held past
 * half the bound until a flush brings the age down or its deadline, is refused at the bound
 * whatever the reason (database behind, down or hung), is let in again once the writes caught
 * up, and is refused outright past the queue limit or once closed.
 */
import { AdmissionGate, type Backlog } from '../../../src/store/state/admission';
import { Unavailable } from '../../../src/core/errors';
import { createFakeTime, type FakeTime } from '../../support/fakes/time';

let time: FakeTime;
/** The flusher as the gate sees it: the backlog's size and the age of its oldest change. */
let writes: { backlog: number; age: number; failing: string | null } & Backlog;
let gate: AdmissionGate;

beforeEach(() => {
  time = createFakeTime();
  writes = {
    backlog: 0,
    age: 0,
    failing: null,
    oldestUnwrittenMs() {
      return this.age;
    },
  };
  gate = new AdmissionGate(writes, {
    maxUnwrittenMs: 1000,
    queueLimit: 100,
    now: () => time.clock.now().getTime(),
    scheduler: time.scheduler,
  });
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

it('lets work in at once while the oldest unwritten change is young, and work without a deadline when it is getting old', async () => {
  writes.backlog = 99;
  writes.age = 499;
  expect(gate.pressure).toBe('ok');
  await expect(gate.admit(deadline(1000))).resolves.toBeUndefined();
  writes.age = 500;
  expect(gate.pressure).toBe('behind');
  await expect(gate.admit()).resolves.toBeUndefined();
  expect(gate.waiting).toBe(0);
});

it('holds work past half the bound and lets it in once a flush brought the age under it', async () => {
  writes.age = 700;
  const held = outcome(gate.admit(deadline(1000)));
  await time.settle();
  expect(held.is).toBe('held');
  // A flush that left an old change unwritten lets nothing in.
  writes.age = 600;
  gate.releaseHeld();
  await time.settle();
  expect(held.is).toBe('held');
  writes.age = 30;
  gate.releaseHeld();
  await time.settle();
  expect(held.is).toBe('in');
  // Its deadline's timer went with it.
  expect(time.pending).toBe(0);
});

it('lets held work in at its deadline below the bound, and refuses it at the bound', async () => {
  writes.age = 900;
  const near = outcome(gate.admit(deadline(50)));
  await time.advance(50);
  expect(near.is).toBe('in');

  const far = outcome(gate.admit(deadline(100)));
  await time.advance(99);
  expect(far.is).toBe('held');
  writes.age = 1000;
  await time.advance(1);
  expect(far.is).toBeInstanceOf(Unavailable);
  expect((far.is as Error).message).toMatch(/database is behind: a change waits to be written for 1000 ms/);
  expect((far.is as Unavailable).retryAfterSeconds).toBe(1);
});

it('refuses new work at the bound, whether the database is slow, down or hung (at its deadline unless a flush came), and admits it again once written', async () => {
  writes.age = 1000;
  expect(gate.pressure).toBe('full');
  await expect(gate.admit()).rejects.toBeInstanceOf(Unavailable);
  await expect(gate.admit(deadline(0))).rejects.toBeInstanceOf(Unavailable);
  // With a deadline it waits for a flush first: one that brings the age down lets it in...
  const rescued = outcome(gate.admit(deadline(100)));
  await time.advance(50);
  expect(rescued.is).toBe('held');
  writes.age = 10;
  gate.releaseHeld();
  await time.settle();
  expect(rescued.is).toBe('in');
  // ...and without one, it is refused at its deadline.
  writes.age = 1000;
  const refusedLater = outcome(gate.admit(deadline(100)));
  await time.advance(100);
  expect(refusedLater.is).toBeInstanceOf(Unavailable);
  expect(() => {
    const refused = gate.refusal();
    if (refused) throw refused;
  }).toThrow(/1000 ms/);
  writes.failing = 'connection refused';
  writes.age = 5_000;
  await expect(gate.admit()).rejects.toThrow(/last error: connection refused/);
  // A flush that still leaves the bound passed keeps a held caller waiting, until its deadline.
  writes.age = 800;
  const held = outcome(gate.admit(deadline(1000)));
  writes.age = 1200;
  gate.releaseHeld();
  await time.settle();
  expect(held.is).toBe('held');
  await time.advance(1000);
  expect(held.is).toBeInstanceOf(Unavailable);
  writes.failing = null;
  writes.age = 0;
  expect(gate.pressure).toBe('ok');
  await expect(gate.admit(deadline(1000))).resolves.toBeUndefined();
});

it('refuses work past the queue limit, saying why the flushes fail', async () => {
  writes.backlog = 100;
  expect(gate.pressure).toBe('full');
  await expect(gate.admit()).rejects.toThrow('the write queue is full (100 writes waiting)');
  writes.failing = 'connection refused';
  await expect(gate.admit(deadline(1000))).rejects.toThrow(
    'the write queue is full (100 writes waiting; last error: connection refused)',
  );
});

it('once closed, refuses new work and lets what it holds in after the next flush, even while behind', async () => {
  writes.age = 700;
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
