/**
 * Load generation for the benchmarks: closed loop (N callers, each sending its next call when the
 * last one answered) and open loop (calls sent at a fixed offered rate whatever the answers, with
 * latency counted from when each call was due, so a late sender or a queue never hides), and
 * the summaries and tables they print. A call resolves true for the answer it expected, false
 * for an error status; a rejected call (a transport error) also counts as an error.
 */
import { performance } from 'node:perf_hooks';

export type Call = (i: number) => Promise<boolean>;

export interface Result {
  count: number;
  errors: number;
  seconds: number;
  /** Milliseconds per call: closed loop from the send, open loop from when the call was due. */
  latencies: number[];
  /** Micro-seconds of CPU the server and its database spent (when a probe was given). */
  serverMicros: number;
  dbMicros: number;
  clientMicros: number;
  /** Writes still queued when the last call answered (what the database had not caught up with). */
  backlog: number;
  /** Documents the server's flushes wrote meanwhile (when a probe was given). */
  writes: number;
  /** Bytes (BSON) those writes sent, and of them to `users` (when a probe was given). */
  written: number;
  userWritten: number;
  /** Bytes the server allocated on its heap meanwhile, and of them bytes promoted to its old generation (when a probe was given). */
  allocated: number;
  promoted: number;
  /** Open loop: the offered rate. */
  offered?: number;
}

/** CPU time (µs) of the server and of its database, so that CPU per call can be printed. */
export interface Cpu {
  server: number;
  db: number;
  /** Writes the server had queued and not yet written when asked. */
  backlog: number;
  /** Documents the server's flushes have written so far. */
  writes: number;
  /** Bytes (BSON) they sent so far, and of them to `users`. */
  written: number;
  userWritten: number;
  /** Bytes the server has allocated on its heap so far, and of them promoted to its old generation. */
  allocated: number;
  promoted: number;
}
export type CpuProbe = () => Promise<Cpu>;

const noProbe: CpuProbe = async () => ({
  server: 0,
  db: 0,
  backlog: 0,
  writes: 0,
  written: 0,
  userWritten: 0,
  allocated: 0,
  promoted: 0,
});

/** `count` calls, `concurrency` at a time. */
export async function closedLoop(
  count: number,
  concurrency: number,
  call: Call,
  cpu: CpuProbe = noProbe,
): Promise<Result> {
  const latencies: number[] = new Array(count);
  let next = 0;
  let errors = 0;
  const server0 = await cpu();
  const client0 = process.cpuUsage();
  const started = performance.now();
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const t = performance.now();
      const ok = await call(i).catch(() => false);
      if (!ok) errors++;
      latencies[i] = performance.now() - t;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  const client = process.cpuUsage(client0);
  const server1 = await cpu();
  return {
    count,
    errors,
    seconds,
    latencies,
    serverMicros: server1.server - server0.server,
    dbMicros: server1.db - server0.db,
    clientMicros: client.user + client.system,
    backlog: server1.backlog,
    writes: server1.writes - server0.writes,
    written: server1.written - server0.written,
    userWritten: server1.userWritten - server0.userWritten,
    allocated: server1.allocated - server0.allocated,
    promoted: server1.promoted - server0.promoted,
  };
}

/** `rate` calls per second for `seconds`, each sent when due. */
export async function openLoop(
  rate: number,
  seconds: number,
  call: Call,
  cpu: CpuProbe = noProbe,
  first = 0,
): Promise<Result> {
  const count = Math.max(1, Math.round(rate * seconds));
  const latencies: number[] = new Array(count);
  const interval = 1000 / rate;
  let errors = 0;
  const server0 = await cpu();
  const client0 = process.cpuUsage();
  const started = performance.now();
  await new Promise<void>((resolve) => {
    let sent = 0;
    let done = 0;
    const tick = () => {
      const now = performance.now();
      while (sent < count && started + sent * interval <= now) {
        const i = sent++;
        const due = started + i * interval;
        void call(first + i)
          .catch(() => false)
          .then((ok) => {
            if (!ok) errors++;
            latencies[i] = performance.now() - due;
            if (++done === count) resolve();
          });
      }
      if (sent < count) setTimeout(tick, Math.max(0, started + sent * interval - performance.now()));
    };
    tick();
  });
  const elapsed = (performance.now() - started) / 1000;
  const client = process.cpuUsage(client0);
  const server1 = await cpu();
  return {
    count,
    errors,
    seconds: elapsed,
    latencies,
    serverMicros: server1.server - server0.server,
    dbMicros: server1.db - server0.db,
    clientMicros: client.user + client.system,
    backlog: server1.backlog,
    writes: server1.writes - server0.writes,
    written: server1.written - server0.written,
    userWritten: server1.userWritten - server0.userWritten,
    allocated: server1.allocated - server0.allocated,
    promoted: server1.promoted - server0.promoted,
    offered: rate,
  };
}

export const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;

export interface Summary {
  count: number;
  errors: number;
  throughput: number;
  p50: number;
  p99: number;
  p999: number;
  serverCpu: number;
  dbCpu: number;
  clientCpu: number;
  /** The largest backlog left at the end of a run. */
  backlog: number;
  /** Documents written per call. */
  writes: number;
  /** Bytes (BSON) written per call, and of them to `users`. */
  written: number;
  userWritten: number;
  /** Bytes the server allocated per call, and of them promoted to its old generation. */
  allocated: number;
  promoted: number;
}

export function summarize(results: readonly Result[]): Summary {
  const latencies = results.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const count = results.reduce((n, r) => n + r.count, 0);
  const sum = (f: (r: Result) => number) => results.reduce((n, r) => n + f(r), 0);
  return {
    count,
    errors: sum((r) => r.errors),
    throughput: count / sum((r) => r.seconds),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    p999: percentile(latencies, 99.9),
    serverCpu: sum((r) => r.serverMicros) / count,
    dbCpu: sum((r) => r.dbMicros) / count,
    backlog: Math.max(...results.map((r) => r.backlog)),
    clientCpu: sum((r) => r.clientMicros) / count,
    writes: sum((r) => r.writes) / count,
    written: sum((r) => r.written) / count,
    userWritten: sum((r) => r.userWritten) / count,
    allocated: sum((r) => r.allocated) / count,
    promoted: sum((r) => r.promoted) / count,
  };
}

const num = (n: number, w: number, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : '-').padStart(w);

/** A table of summaries, one row per label. */
export function table(
  title: string,
  rows: readonly [string, Summary][],
  extra?: (label: string, s: Summary) => string,
): string {
  let out = `\n${title}\n  ${'what'.padEnd(26)}  calls errors    per s   p50 ms   p99 ms p99.9 ms  backlog  CPU µs/call: server   db client  docs  KB/call: alloc promoted written users${extra ? '  ' : ''}\n`;
  for (const [label, s] of rows) {
    out += `  ${label.padEnd(26)}${String(s.count).padStart(7)}${String(s.errors).padStart(7)}${num(s.throughput, 9, 0)}${num(s.p50, 9)}${num(s.p99, 9)}${num(s.p999, 9)}${String(s.backlog).padStart(9)}${num(s.serverCpu, 23, 0)}${num(s.dbCpu, 5, 0)}${num(s.clientCpu, 7, 0)}${num(s.writes, 6, 1)}${num(s.allocated / 1024, 15, 1)}${num(s.promoted / 1024, 9, 1)}${num(s.written / 1024, 8, 1)}${num(s.userWritten / 1024, 6, 1)}`;
    out += `${extra ? `  ${extra(label, s)}` : ''}\n`;
  }
  return out;
}
