/**
 * Is the database answering right now? Two witnesses:
 *  - the driver's own monitoring (`topologyDescriptionChanged`): a server turns `Unknown` when an
 *    operation meets a network error or a heartbeat fails, and known again when one succeeds. It
 *    sees a database that is gone (refused, reset) at once, but one that hangs (a stopped process,
 *    a full disk, a stalled network) only when a heartbeat times out: seconds;
 *  - a probe: a `ping` every `probeEveryMs` on a connection of its own (not one of the pool, so a
 *    busy pool never delays it). A ping unanswered after `stallMs` means the database hangs.
 * The database is down when either says so. Requests that need it answer 503 at once while it is
 * down, and requests already waiting on it when it goes down are told (`onDown`), so that a hang
 * costs a caller at most `stallMs` plus one probe interval, never a wait for the driver.
 */
import { performance } from 'node:perf_hooks';
import { MongoClient } from 'mongodb';
import type { TopologyDescriptionChangedEvent } from 'mongodb';

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
  /** How long a ping may stay unanswered before the database is taken as hung (ms). */
  stallMs: number;
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
export async function watchDatabase(client: MongoClient, uri: string, dbName: string, o: HealthOptions): Promise<DatabaseHealth> {
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
    const usable = t.type !== 'ReplicaSetNoPrimary' && t.type !== 'Unknown' && servers.some((s) => s.type !== 'Unknown');
    const cause = servers.find((s) => s.error)?.error?.message;
    update(() => {
      topologyDown = usable ? null : `the database is unreachable${cause ? ` (${cause})` : ''}`;
    });
  });

  let probe: MongoClient | null = null;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;
  if (o.probeEveryMs > 0) {
    probe = new MongoClient(uri, {
      maxPoolSize: 1,
      minPoolSize: 1,
      // The probe's own monitoring stays quiet: the main client's is the one followed above.
      heartbeatFrequencyMS: 60_000,
      serverSelectionTimeoutMS: o.stallMs,
      connectTimeoutMS: Math.max(o.stallMs, 1000),
      // A ping on a connection that went silent for good (a peer gone without a reset) gives up,
      // so that the next one opens a new connection.
      socketTimeoutMS: Math.max(o.stallMs * 10, 5000),
    });
    const target = probe.db(dbName);
    const ping = () => {
      timer = null;
      if (closed) return;
      let answered = false;
      const started = Date.now();
      const startedAt = performance.now();
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
      }, o.stallMs);
      target
        .command({ ping: 1 })
        .catch(() => undefined)
        .finally(() => {
          answered = true;
          clearTimeout(watchdog);
          o.onProbe?.((performance.now() - startedAt) / 1000);
          update(() => {
            stalled = null;
          });
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
