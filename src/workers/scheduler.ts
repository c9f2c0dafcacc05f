/** The process's timers as the core's Scheduler port: unref'd, so none keeps the process alive. */
import type { Scheduler } from '../core/ports';

export const timerScheduler: Scheduler = {
  after(ms, task) {
    const timer = setTimeout(task, Math.max(0, ms));
    timer.unref();
    return () => clearTimeout(timer);
  },
};
