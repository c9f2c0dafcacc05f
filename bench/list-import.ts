/**
 * `npm run bench`'s "imports" section: CSV imports of `--import-rows` rows (default 100,000, the
 * bound of one import) into new IP lists over REST, as a caller runs them, and what one costs the
 * verdicts beside it.
 *
 *   1. an import alone: the POST (the whole CSV read and checked: 202 with the job), then the job
 *      followed at its Location until it ends; its time, rate and CPU per row;
 *   2. the same CSV again (every item there already, so nothing is rewritten);
 *   3. REST /v1/risk in a closed loop (concurrency 4) alone, then during an import of another CSV
 *      as large; a list's item count is asked every 500 ms all along (the first list's while the
 *      verdicts run alone, the importing list's during the import).
 *
 * A version that writes an import before answering is measured the same way: its POST answers
 * 201 (or an error) at the end, and that is the import's time.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import {
  closedLoop,
  percentile,
  summarize,
  table,
  type Call,
  type CpuProbe,
  type Result,
  type Summary,
} from './lib/load';
import type { Endpoints } from './lib/server';

export interface ImportBenchOptions {
  rows: number;
}

export interface ImportFigures {
  rows: number;
  /** The POST's status (202: a job) and the job's end state (null: no job). */
  answered: number;
  state: string | null;
  /** The POST: the CSV sent, read and checked (and, with a 201, written). */
  postSeconds: number;
  /** From the POST to the job's end (or the POST's answer). */
  jobSeconds: number;
  itemsPerSecond: number;
  /** Items the list counts at the end. */
  counted: number | null;
  /** CPU per row of the import alone, µs. */
  serverCpuPerItem: number;
  dbCpuPerItem: number;
  /** The same CSV again. */
  rerunSeconds: number;
  rerun: string;
  /** The import of another CSV as large beside the verdicts. */
  beside: { answered: number; state: string | null; seconds: number };
  risk: { alone: Summary; during: Summary };
  /** items/count every 500 ms, beside the verdicts alone and during the import beside them. */
  count: Record<
    'alone' | 'during',
    { asked: number; errors: number; statuses: Record<string, number>; p50: number; p99: number; max: number }
  >;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

function request(
  e: Endpoints,
  agent: http.Agent,
  method: string,
  path: string,
  body?: string,
  contentType = 'application/json',
): Promise<Answer> {
  const url = new URL(path, e.rest);
  const authorization = `Basic ${Buffer.from(`:${e.secret}`).toString('base64')}`;
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        agent,
        headers: {
          authorization,
          ...(body === undefined
            ? {}
            : { 'content-type': contentType, 'content-length': Buffer.byteLength(body) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : null;
          } catch {
            // kept as text
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

interface Job {
  status: string;
  written: number;
  items: number;
  created: number;
  updated: number;
  unchanged: number;
  error: string | null;
}

/** How an import went: a job (202) followed to its end, or answered at once (201, or an error status). */
interface Outcome {
  /** The POST's status. */
  answered: number;
  /** The job as it ended (a 202), or null. */
  job: Job | null;
  /** The POST's answer when it was not a job. */
  body: unknown;
  postSeconds: number;
  /** From the POST to the job's end (or the POST's answer). */
  seconds: number;
}

/**
 * An import of `csv`, followed to its end. `during` is started with the POST and told when the
 * import ended (a version that writes before answering answers 201, or an error, at its end).
 */
async function importAndFollow(
  e: Endpoints,
  agent: http.Agent,
  listId: string,
  csv: string,
  during?: { start: () => Promise<void>; ended: () => void },
): Promise<Outcome> {
  const started = performance.now();
  const beside = during?.start();
  try {
    const posted = await request(e, agent, 'POST', `/v1/lists/${listId}/items/import`, csv, 'text/csv');
    const postSeconds = (performance.now() - started) / 1000;
    if (posted.status !== 202)
      return { answered: posted.status, job: null, body: posted.body, postSeconds, seconds: postSeconds };
    const location = String(posted.headers.location);
    let job = posted.body as Job;
    while (job.status !== 'succeeded' && job.status !== 'failed') {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const r = await request(e, agent, 'GET', location);
      if (r.status === 200) job = r.body as Job;
    }
    return { answered: 202, job, body: null, postSeconds, seconds: (performance.now() - started) / 1000 };
  } finally {
    during?.ended();
    await beside;
  }
}

const describe = (o: Outcome): string =>
  o.job
    ? `POST answered 202 after ${o.postSeconds.toFixed(1)} s (read and checked); the job ${o.job.status} after ${o.seconds.toFixed(1)} s with ${o.job.written} of ${o.job.items} items written (${o.job.created} created, ${o.job.updated} updated, ${o.job.unchanged} unchanged)${o.job.error ? `: ${o.job.error}` : ''}`
    : `POST answered ${o.answered} after ${o.postSeconds.toFixed(1)} s: ${JSON.stringify(o.body).slice(0, 200)}`;

async function newList(e: Endpoints, agent: http.Agent): Promise<string> {
  const created = await request(
    e,
    agent,
    'POST',
    '/v1/lists',
    JSON.stringify({
      name: `bench import ${randomBytes(4).toString('hex')}`,
      color: '$red',
      primary_field: 'ip',
    }),
  );
  if (created.status !== 201) throw new Error(`creating the list answered ${created.status}`);
  return (created.body as { id: string }).id;
}

async function countOf(e: Endpoints, agent: http.Agent, listId: string): Promise<number | null> {
  const r = await request(e, agent, 'POST', `/v1/lists/${listId}/items/count`, '{}');
  return r.status === 200 ? (r.body as { total_count: number }).total_count : null;
}

export async function benchListImport(
  e: Endpoints,
  o: ImportBenchOptions,
  io: { out: (s: string) => void; risk: Call; cpu: CpuProbe; settle: () => Promise<void> },
): Promise<ImportFigures> {
  const { out } = io;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  try {
    // Two CSVs of as many rows (different networks), each into a list of its own.
    const csvOf = (first: number) => {
      let csv = 'value,comment\n';
      for (let i = 0; i < o.rows; i++)
        csv += `${first}.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255},seen in incident ${i % 977}\n`;
      return csv;
    };
    const quiet = csvOf(10);
    const busy = csvOf(11);
    out(
      `\nCSV imports of ${o.rows} rows (${(quiet.length / 1024 / 1024).toFixed(1)} MB) into an IP list over REST: alone, then beside REST /v1/risk (closed loop, concurrency 4)\n`,
    );

    // 1. The import alone: its time and its cost.
    const alone = await newList(e, agent);
    await io.settle();
    const cpu0 = await io.cpu();
    const first = await importAndFollow(e, agent, alone, quiet);
    const cpu1 = await io.cpu();
    const counted = await countOf(e, agent, alone);
    out(
      `  alone: ${describe(first)}; ${(o.rows / first.seconds).toFixed(0)} rows/s; the list counts ${counted ?? '? (the count failed)'}; CPU per row: server ${((cpu1.server - cpu0.server) / o.rows).toFixed(0)} µs, database ${((cpu1.db - cpu0.db) / o.rows).toFixed(0)} µs\n`,
    );

    // 2. The same CSV again: everything is there.
    await io.settle();
    const rerun = await importAndFollow(e, agent, alone, quiet);
    out(`  the same CSV again: ${describe(rerun)}\n`);

    // 3. Verdicts alone (the first list counted every 500 ms meanwhile, for comparison), then
    //    beside an import of the other CSV (in rounds of 500 calls), with the import's list counted
    //    every 500 ms, until it ends.
    interface Counting {
      ms: number[];
      statuses: Map<number, number>;
    }
    const countEvery500ms = async (listId: string, going: () => boolean): Promise<Counting> => {
      const c: Counting = { ms: [], statuses: new Map() };
      while (going()) {
        const t = performance.now();
        const r = await request(e, agent, 'POST', `/v1/lists/${listId}/items/count`, '{}').catch(() => ({
          status: 0,
        }));
        c.ms.push(performance.now() - t);
        c.statuses.set(r.status, (c.statuses.get(r.status) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      return c;
    };
    const summary = (c: Counting) => {
      const sorted = [...c.ms].sort((a, b) => a - b);
      const errors = c.ms.length - (c.statuses.get(200) ?? 0);
      return {
        asked: c.ms.length,
        errors,
        statuses: Object.fromEntries(c.statuses),
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        max: sorted[sorted.length - 1] ?? NaN,
      };
    };
    const countLine = (what: string, s: ReturnType<typeof summary>) =>
      `  items/count ${what}: ${s.asked} asked, ${s.errors} errors (statuses ${JSON.stringify(s.statuses)}), p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms, max ${s.max.toFixed(1)} ms\n`;
    await io.settle();
    let scoring = true;
    const countsAlone = countEvery500ms(alone, () => scoring);
    const riskAlone = summarize([await closedLoop(3000, 4, io.risk, io.cpu)]);
    scoring = false;
    const countAlone = summary(await countsAlone);
    await io.settle();
    const besideList = await newList(e, agent);
    let importing = true;
    const riskRounds: Result[] = [];
    let countsDuring: Promise<Counting> = Promise.resolve({ ms: [], statuses: new Map() });
    const beside = async () => {
      countsDuring = countEvery500ms(besideList, () => importing);
      while (importing) riskRounds.push(await closedLoop(500, 4, io.risk));
      await countsDuring;
    };
    const second = await importAndFollow(e, agent, besideList, busy, {
      start: beside,
      ended: () => (importing = false),
    });
    const during = summarize(riskRounds);
    const countDuring = summary(await countsDuring);
    out(
      `  beside the verdicts: ${describe(second)}; ${(o.rows / second.seconds).toFixed(0)} rows/s; the list counts ${(await countOf(e, agent, besideList)) ?? '? (the count failed)'}\n`,
    );

    const figures: ImportFigures = {
      rows: o.rows,
      answered: first.answered,
      state: first.job?.status ?? null,
      postSeconds: first.postSeconds,
      jobSeconds: first.seconds,
      itemsPerSecond: o.rows / first.seconds,
      counted,
      serverCpuPerItem: (cpu1.server - cpu0.server) / o.rows,
      dbCpuPerItem: (cpu1.db - cpu0.db) / o.rows,
      rerunSeconds: rerun.seconds,
      rerun: describe(rerun),
      beside: { answered: second.answered, state: second.job?.status ?? null, seconds: second.seconds },
      risk: { alone: riskAlone, during },
      count: { alone: countAlone, during: countDuring },
    };
    out(countLine('beside the verdicts alone (the first list)', countAlone));
    out(countLine('during the import beside the verdicts', countDuring));
    out(
      table('Verdicts beside a large import (REST /v1/risk, concurrency 4)', [
        ['alone', riskAlone],
        ['during the import', during],
      ]),
    );
    out(
      `  during ÷ alone: p50 ×${(during.p50 / riskAlone.p50).toFixed(2)}, p99 ×${(during.p99 / riskAlone.p99).toFixed(2)}\n`,
    );
    return figures;
  } finally {
    agent.destroy();
  }
}
