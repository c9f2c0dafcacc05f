/**
 * Periodic sweeps (expired privacy exports, counters, client observations, retention): each task runs at
 * start and then every `everyMs`, never overlapping itself; a failure is logged and the next run
 * comes as planned. The core says what a sweep deletes; this says when.
 */
import type { Scheduler } from '../core/ports';

export interface SweepTask {
  name: string;
  everyMs: number;
  /** Run at start too (default true). */
  atStart?: boolean;
  run(): Promise<unknown>;
  /** Asks a run under way to end early (a long one: shutdown waits for it). */
  stop?(): void;
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export class Sweeps {
  private readonly cancels = new Map<SweepTask, () => void>();
  private readonly running = new Set<Promise<unknown>>();
  private started = false;

  constructor(
    private readonly tasks: readonly SweepTask[],
    private readonly o: { scheduler: Scheduler; log: { warn(obj: object, msg: string): void } },
  ) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    for (const task of this.tasks) this.plan(task, task.atStart === false ? task.everyMs : 0);
  }

  /** No further run; resolves when the runs under way are done. */
  async stop(): Promise<void> {
    this.started = false;
    for (const cancel of this.cancels.values()) cancel();
    this.cancels.clear();
    for (const task of this.tasks) task.stop?.();
    await Promise.allSettled([...this.running]);
  }

  private plan(task: SweepTask, ms: number): void {
    this.cancels.set(
      task,
      this.o.scheduler.after(
        ms,
        () => {
          const run = task
            .run()
            .catch((err: unknown) => this.o.log.warn({ err: message(err) }, `${task.name}: sweep failed`))
            .finally(() => {
              this.running.delete(run);
              if (this.started) this.plan(task, task.everyMs);
            });
          this.running.add(run);
        },
        { background: true },
      ),
    );
  }
}
