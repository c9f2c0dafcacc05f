/**
 * A fake clock and scheduler sharing one fake time: nothing waits for real. `advance(ms)` moves
 * the time on and runs every task that falls due on the way, in order; `settle()` lets the
 * promises those tasks started run. Tests never sleep.
 */
import type { Clock, Scheduler } from '../../../src/core/ports';

export interface FakeTime {
  clock: Clock;
  scheduler: Scheduler;
  /** Tasks waiting on the scheduler. */
  readonly pending: number;
  /** Move the time on by `ms`, running the tasks due on the way (and what they schedule). */
  advance(ms: number): Promise<void>;
  /** Let every promise already started run to its next wait. */
  settle(): Promise<void>;
}

/** Drain the microtask queue and the I/O callbacks already queued (no timer is involved). */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

export function createFakeTime(start = new Date('2026-11-22T10:00:00.000Z')): FakeTime {
  let now = start.getTime();
  let seq = 0;
  const tasks: { at: number; seq: number; run: () => void }[] = [];
  const scheduler: Scheduler = {
    after(ms, run) {
      const task = { at: now + Math.max(0, ms), seq: seq++, run };
      tasks.push(task);
      return () => {
        const i = tasks.indexOf(task);
        if (i >= 0) tasks.splice(i, 1);
      };
    },
  };
  return {
    clock: { now: () => new Date(now) },
    scheduler,
    get pending() {
      return tasks.length;
    },
    async advance(ms) {
      const until = now + ms;
      await settle();
      for (;;) {
        tasks.sort((a, b) => a.at - b.at || a.seq - b.seq);
        const next = tasks[0];
        if (!next || next.at > until) break;
        tasks.shift();
        now = Math.max(now, next.at);
        next.run();
        await settle();
      }
      now = until;
      await settle();
    },
    settle,
  };
}
