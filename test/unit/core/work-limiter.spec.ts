/**
 * The verdicts' work limiter on fake time: turns up to the bound at once, the rest in order
 * within their wait, refused (Unavailable, Retry-After 1) past it or when the queue is full, a
 * waiter whose caller left dropped unstarted, and the bound adapting: shrinking while admitted
 * work is slow (a starved machine), growing back while it is quick and the bound is reached.
 */
import { WorkLimiter, type Caller } from '../../../src/core/work-limiter';
import { Unavailable } from '../../../src/core/errors';
import { createFakeTime, type FakeTime } from '../../support/fakes/time';

let time: FakeTime;
const limiter = (o: Partial<ConstructorParameters<typeof WorkLimiter>[0]> = {}) =>
  new WorkLimiter({
    maxLimit: 4,
    minLimit: 1,
    maxWaitMs: 1000,
    maxQueue: 3,
    targetMs: 250,
    windowMs: 1000,
    clock: time.clock,
    scheduler: time.scheduler,
    ...o,
  });

function outcome<T>(promise: Promise<T>): { readonly is: 'waiting' | T | Error } {
  const o: { is: 'waiting' | T | Error } = { is: 'waiting' };
  promise.then(
    (v) => (o.is = v),
    (err: Error) => (o.is = err),
  );
  return o;
}

/** A caller that leaves when told to. */
function caller(): Caller & { leave(): void } {
  const listeners = new Set<() => void>();
  const c = {
    gone: false,
    onGone(l: () => void) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    leave() {
      c.gone = true;
      for (const l of [...listeners]) l();
    },
  };
  return c;
}

beforeEach(() => {
  time = createFakeTime();
});

it('gives turns up to the bound at once, then in order as turns end', async () => {
  const l = limiter();
  const turns = await Promise.all([l.acquire(), l.acquire(), l.acquire(), l.acquire()]);
  expect(l.inFlight).toBe(4);
  const fifth = outcome(l.acquire());
  const sixth = outcome(l.acquire());
  await time.settle();
  expect([fifth.is, sixth.is]).toEqual(['waiting', 'waiting']);
  turns[0]?.();
  await time.settle();
  expect(typeof fifth.is).toBe('function');
  expect(sixth.is).toBe('waiting');
  // Ending a turn twice frees one place only.
  turns[0]?.();
  await time.settle();
  expect(sixth.is).toBe('waiting');
  expect(l.inFlight).toBe(4);
});

it('refuses a request that waited too long, or when too many wait, saying when to come back', async () => {
  const l = limiter();
  for (let i = 0; i < 4; i++) await l.acquire();
  const waiting = [outcome(l.acquire()), outcome(l.acquire()), outcome(l.acquire())];
  await expect(l.acquire()).rejects.toThrow(/too many requests are waiting/);
  await time.advance(999);
  expect(waiting.every((w) => w.is === 'waiting')).toBe(true);
  await time.advance(1);
  for (const w of waiting) {
    expect(w.is).toBeInstanceOf(Unavailable);
    expect((w.is as Unavailable).retryAfterSeconds).toBe(1);
  }
  expect(l.waiting).toBe(0);
});

it('drops a waiter whose caller left, unstarted, and never starts work for a caller already gone', async () => {
  const l = limiter();
  const turns = [];
  for (let i = 0; i < 4; i++) turns.push(await l.acquire());
  const c = caller();
  const left = outcome(l.acquire(c));
  const next = outcome(l.acquire());
  c.leave();
  await time.settle();
  expect(left.is).toBeInstanceOf(Unavailable);
  turns[0]?.();
  await time.settle();
  expect(typeof next.is).toBe('function');
  const gone = caller();
  gone.leave();
  await expect(l.acquire(gone)).rejects.toThrow(/went away/);
});

it('shrinks the bound while admitted work is slow, down to its least, and grows it back while work is quick and the bound is reached', async () => {
  const l = limiter({ maxLimit: 8, minLimit: 2, maxQueue: 100, maxWaitMs: 60_000 });
  // Slow work: each turn takes 500 ms, over the 250 ms target; the bound is looked at every second.
  const seen: number[] = [];
  for (let round = 0; round < 16; round++) {
    const turn = await l.acquire();
    await time.advance(500);
    turn();
    seen.push(l.limit);
  }
  expect(seen[0]).toBe(8);
  expect(seen.at(-1)).toBe(2);
  // Never below the least, and only down while work is slow.
  expect(seen.every((v, i) => i === 0 || v <= (seen[i - 1] as number))).toBe(true);

  // Quick work that reaches the bound (one more waits each window): it grows back, a step a window.
  for (let round = 0; round < 30 && l.limit < 8; round++) {
    const turns: (() => void)[] = [];
    while (l.inFlight < l.limit) turns.push(await l.acquire());
    const extra = l.acquire();
    await time.advance(10);
    for (const t of turns) t();
    (await extra)();
    await time.advance(1000);
    await l.acquire().then((t) => t());
  }
  expect(l.limit).toBe(8);
});
