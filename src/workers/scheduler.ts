/** The process's timers as the core's Scheduler port (background ones unref'd: they keep no process alive). */
import type { Scheduler } from '../core/ports';

export const timerScheduler: Scheduler = {
  after(ms, task, opts) {
    const timer = setTimeout(task, Math.max(0, ms));
    if (opts?.background) timer.unref();
    return () => clearTimeout(timer);
  },
};
