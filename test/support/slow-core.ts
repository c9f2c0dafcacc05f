/**
 * A slowed-down core for the doors' deadline tests: the real services, with their credential
 * look-up and verdicts made as slow as a test says (simulated latency) or held until it releases
 * them, and every such core call counted and tracked. A test proves "before" by the order of
 * events (an answer came while the core call was held), never by a clock, so it holds on a busy
 * machine (CONTRIBUTING.md, "Tests on a busy machine").
 */
import type { Services } from '../../src/core/services';
import { delay, waitFor } from './wait';

export interface SlowCore {
  /**
   * The knobs (latency in ms) and counts of core calls. `held`: while set, every evaluation waits
   * for it instead of `evaluateMs` (holdEvaluations).
   */
  readonly slow: {
    authMs: number;
    evaluateMs: number;
    evaluateCalls: number;
    evaluateDone: number;
    authCalls: number;
    trackAccepts: number;
    held: Promise<void> | null;
  };
  /** Core calls (credential look-ups, evaluations) still running, abandoned ones included. */
  readonly running: ReadonlySet<Promise<unknown>>;
  /** `real` with the slowed-down credential look-up and verdicts (and track's accepts counted). */
  wrap(real: Services): Services;
  /**
   * Holds every core evaluation until the returned function is called (call `releaseHeld` after
   * each test too). An answer that comes while they are held did not wait for the core.
   */
  holdEvaluations(): () => void;
  /** Releases what holdEvaluations holds (nothing when nothing is). */
  releaseHeld(): void;
  /**
   * Resolves once every core call started has finished and what follows it has run: the moment a
   * call past its deadline (or cancelled) would have started its next core call. Proves that
   * something did not happen without sleeping.
   */
  idle(): Promise<void>;
  /** Resolves once `cond` holds (checked every few ms; fails after a minute naming `what`). */
  until(cond: () => boolean, what: string): Promise<void>;
}

export function createSlowCore(): SlowCore {
  const slow: SlowCore['slow'] = {
    authMs: 0,
    evaluateMs: 0,
    evaluateCalls: 0,
    evaluateDone: 0,
    authCalls: 0,
    trackAccepts: 0,
    held: null,
  };
  let release: () => void = () => undefined;
  const running = new Set<Promise<unknown>>();
  const tracked = <T>(p: Promise<T>): Promise<T> => {
    running.add(p);
    return p.finally(() => running.delete(p));
  };
  return {
    slow,
    running,
    wrap(real) {
      const access = Object.create(real.access) as Services['access'];
      access.caller = (...args) =>
        tracked(
          (async () => {
            slow.authCalls++;
            await delay(slow.authMs);
            return real.access.caller(...args);
          })(),
        );
      const verdicts = Object.create(real.verdicts) as Services['verdicts'];
      verdicts.evaluate = (principal, endpoint, body) =>
        tracked(
          (async () => {
            slow.evaluateCalls++;
            await (slow.held ?? delay(slow.evaluateMs));
            slow.evaluateDone++;
            return real.verdicts.evaluate(principal, endpoint, body);
          })(),
        );
      const track = Object.create(real.track) as Services['track'];
      track.accept = (principal, body, raw) => {
        slow.trackAccepts++;
        return real.track.accept(principal, body, raw);
      };
      return { ...real, access, verdicts, track };
    },
    holdEvaluations() {
      let resolve: () => void = () => undefined;
      slow.held = new Promise<void>((r) => (resolve = r));
      release = () => {
        slow.held = null;
        resolve();
      };
      return release;
    },
    releaseHeld: () => release(),
    async idle() {
      while (running.size > 0) await Promise.allSettled([...running]);
      await new Promise((r) => setImmediate(r));
    },
    async until(cond, what) {
      await waitFor(cond, { what, timeoutMs: 60_000, intervalMs: 5 });
    },
  };
}
