/**
 * Is the database answering right now? Two witnesses:
 *  - the driver's own monitoring (`topologyDescriptionChanged`): a server turns `Unknown` when an
 *    operation meets a network error or a heartbeat fails, and known again when one succeeds. It
 *    sees a database that is gone (refused, reset) at once, but one that hangs (a stopped process,
 *    a full disk, a stalled network) only when a heartbeat times out: seconds;
 *  - a probe: a `ping` every `probeEveryMs` on a connection of its own (not one of the pool, so a
 *    busy pool never delays it). A ping unanswered for longer than the recent pings allow means
 *    the database hangs. The bar is judged over a window, not one ping: three times the slowest of
 *    the last PING_WINDOW pings (the last five to ten seconds), at least `stallMs` and at most
 *    `stallMaxMs`. On an idle machine (pings of a millisecond) a hang is noticed after `stallMs`;
 *    on a busy one, where the database is descheduled now and then for a second or two, those
 *    pauses raise the bar, so that the next one does not take a healthy database for a dead one;
 *    a real hang is still noticed within `stallMaxMs`.
 * The database is down when either says so. Requests that need it answer 503 at once while it is
 * down, and requests already waiting on it when it goes down are told (`onDown`), so that a hang
 * costs a caller at most the bar (above) plus one probe interval, never a wait for the driver.
 */
import { performance } from 'node:perf_hooks';
import type { MongoClient, TopologyDescriptionChangedEvent } from 'mongodb';

/** Pings whose times set the bar for the next one. */
export const PING_WINDOW = 50;
/** Pings answered before their times set the bar (until then it is `stallMaxMs`). */
export const MIN_PINGS_TO_JUDGE = 10;

/**
 * How long a ping may go unanswered before the database is taken as hung, given the times (ms)
 * of the recent pings: three times the slowest of them, within [stallMs, stallMaxMs].
 */
export function stallBar(recent: readonly number[], stallMs: number, stallMaxMs: number): number {
  // Too few pings yet to judge by (the first moments after start): the most lenient bar.
  if (recent.length < MIN_PINGS_TO_JUDGE) return stallMaxMs;
  let slowest = 0;
  for (const ms of recent) if (ms > slowest) slowest = ms;
  return Math.min(stallMaxMs, Math.max(stallMs, 3 * slowest));
}

export interface DatabaseHealth {
  /** Why the database is known to be unreachable now, or null. */
  down(): string | null;
  /** Call `listener` (once) when the database goes down; returns a function that unsubscribes. */
  onDown(listener: (why: string) => void): () => void;
  close(): Promise<void>;
}

export interface HealthOptions {
  /** How often the probe pings (ms). 0: no probe, the driver's monitoring only. */
  probeEveryMs: number;
  /** The least time a ping may stay unanswered before the database is taken as hung (ms). */
  stallMs: number;
  /** The most (the bar rises with the recent pings' times up to this; default: `stallMs` × 10). */
  stallMaxMs?: number;
  /** Told each time the database goes down (why) or comes back (null). */
  onChange?: (why: string | null) => void;
  /** Told how long each ping took to be answered (seconds), a failed one included (metrics). */
  onProbe?: (seconds: number) => void;
}

/**
 * Follows `client`'s topology and, unless `probeEveryMs` is 0, probes `uri` on a connection of
 * its own. The probe never throws; a failed ping counts as an answer (the driver's monitoring
 * reports refused connections), only silence counts as a hang.
 */
export async function watchDatabase(
  client: MongoClient,
  uri: string,
  dbName: string,
  o: HealthOptions,
): Promise<DatabaseHealth> {
  let topologyDown: string | null = null;
  let stalled: string | null = null;
  const listeners = new Set<(why: string) => void>();
  const current = () => topologyDown ?? stalled;
  const update = (apply: () => void) => {
    const before = current();
    apply();
    const now = current();
    if ((before === null) !== (now === null)) o.onChange?.(now);
    if (before === null && now !== null) {
      const called = [...listeners];
      listeners.clear();
      for (const listener of called) listener(now);
    }
  };

  client.on('topologyDescriptionChanged', (e: TopologyDescriptionChangedEvent) => {
    const t = e.newDescription;
    const servers = [...t.servers.values()];
    // A replica set without a primary is down too: every read and write here goes to the primary.
    const usable =
      t.type !== 'ReplicaSetNoPrimary' && t.type !== 'Unknown' && servers.some((s) => s.type !== 'Unknown');
    const cause = servers.find((s) => s.error)?.error?.message;
    update(() => {
      topologyDown = usable ? null : `the database is unreachable${cause ? ` (${cause})` : ''}`;
    });
  });

  let probe: MongoClient | null = null;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;
  const stallMaxMs = Math.max(o.stallMs, o.stallMaxMs ?? o.stallMs * 10);
  if (o.probeEveryMs > 0) {
    // The driver is loaded when a probe starts (stallBar above needs none of it).
    const { MongoClient } = await import('mongodb');
    probe = new MongoClient(uri, {
      maxPoolSize: 1,
      minPoolSize: 1,
      // The probe's own monitoring stays quiet: the main client's is the one followed above.
      heartbeatFrequencyMS: 60_000,
      serverSelectionTimeoutMS: stallMaxMs,
      connectTimeoutMS: Math.max(stallMaxMs, 1000),
      // A ping on a connection that went silent for good (a peer gone without a reset) gives up,
      // so that the next one opens a new connection (a ping that timed out is no answer).
      socketTimeoutMS: Math.max(stallMaxMs * 2, 5000),
    });
    const target = probe.db(dbName);
    const recent: number[] = [];
    const ping = () => {
      timer = null;
      if (closed) return;
      let answered = false;
      const started = Date.now();
      const startedAt = performance.now();
      const bar = stallBar(recent, o.stallMs, stallMaxMs);
      const watchdog = setTimeout(() => {
        // Our own event loop may have been what held the answer up (a long GC, a long task): its
        // I/O is read after the timers, so look again once it has been.
        setImmediate(() => {
          if (!answered && !closed) {
            update(() => {
              stalled = `the database has not answered for ${Date.now() - started} ms`;
            });
          }
        });
      }, bar);
      target
        .command({ ping: 1 })
        .then(
          () => true,
          // A refusal or a reset is an answer (the driver's monitoring reports a database that is
          // gone); a ping that timed out is silence.
          (err: unknown) => !(err instanceof Error && /timed? ?out/i.test(`${err.name} ${err.message}`)),
        )
        .then((heard) => {
          answered = true;
          clearTimeout(watchdog);
          const took = performance.now() - startedAt;
          if (heard) {
            recent.push(took);
            if (recent.length > PING_WINDOW) recent.shift();
            o.onProbe?.(took / 1000);
            update(() => {
              stalled = null;
            });
          }
          if (!closed) timer = setTimeout(ping, o.probeEveryMs);
        });
    };
    timer = setTimeout(ping, o.probeEveryMs);
  }

  return {
    down: current,
    onDown(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      listeners.clear();
      await probe?.close(true).catch(() => undefined);
    },
  };
}
