/**
 * Writes that a use case starts without making its caller wait (counters, stored events,
 * debugger entries). They are tracked so that shutdown and tests can wait until they are done.
 */
export class BackgroundWork {
  private readonly running = new Set<Promise<unknown>>();

  constructor(private readonly onError: (err: unknown) => void) {}

  /** Run `work` in the background; a failure goes to the error handler. */
  add(work: Promise<unknown>): void {
    const p: Promise<unknown> = work.catch(this.onError).finally(() => this.running.delete(p));
    this.running.add(p);
  }

  /** Resolves when nothing started so far (or while waiting) is still running. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}
