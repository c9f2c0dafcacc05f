/**
 * Waiting in tests: on a condition, never for a fixed time.
 *
 * A test that sleeps for "long enough" is slow when the machine is idle and flaky when it is
 * loaded (CI, two cores shared with other jobs). So a test waits for the real condition it needs
 * (`waitFor`), or awaits a promise or an event the code under test exposes (a flush, a drain, a
 * server's 'request' event), and fails with a message naming what never happened.
 *
 * The only other timers in tests are time as an *input* to the system (`delay`): a fake that is
 * slow on purpose (a webhook receiver that takes a while to answer, a gRPC handler slowed down to
 * meet a deadline), or a load generator's pace.
 *
 * A test that asserts something did *not* happen waits for a positive marker that the system got
 * past the point where it would have (a later event processed, a flush or a drain completed, every
 * call in flight settled), not for a pause.
 *
 * This is the one file in test/ that waits on a timer (test/support/offline-start.js, which runs
 * with plain node, has a polling helper of its own); `grep -rn "sleep(\|setTimeout" test` finds
 * nothing else but jest.setTimeout, socket.setTimeout and the timer functions handed to code as
 * its clock.
 */

/** What `waitFor` returns: the probe's value, once it is truthy. */
export type Truthy<T> = Exclude<T, false | 0 | 0n | '' | null | undefined>;

export interface WaitOptions {
  /** What is awaited, for the error on timeout: "the delivery to be marked delivered". */
  what: string;
  /** Fail after this long (default 10 s; keep it under the test's own jest timeout). */
  timeoutMs?: number;
  /** Pause between probes (default 20 ms). */
  intervalMs?: number;
}

/**
 * Calls `probe` until it returns (or resolves to) a truthy value, and resolves with that value.
 * Rejects with `timed out after N ms waiting for <what>` if it never does within `timeoutMs`
 * (the probe runs once more at the deadline, so a slow probe still gets its last chance).
 *
 * An error thrown by the probe is not retried: it rejects at once. That is how a probe fails fast
 * ("the child exited before it listened"); a probe for which an error means "not yet" (a request
 * to a server still starting) catches it itself and returns a falsy value.
 */
export async function waitFor<T>(
  probe: () => T | Promise<T>,
  { what, timeoutMs = 10_000, intervalMs = 20 }: WaitOptions,
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as Truthy<T>;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
}

/**
 * Simulated latency, for fakes and load generators only: a webhook receiver that is slow to
 * answer, a core call slowed down past a deadline, the pace of a stream of requests. It is time
 * given *to* the system under test, never a way to wait *for* a result (that is `waitFor`).
 *
 * `unref`: the timer does not keep the process alive (a fake's "give up after N ms" in a race
 * against an event that may never come).
 */
export function delay(ms: number, { unref = false }: { unref?: boolean } = {}): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    if (unref) timer.unref();
  });
}
