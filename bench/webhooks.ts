/**
 * `node dist/bench/run.js --only webhooks` (not in `npm run bench`'s default sections: it loads
 * a delivery history first): webhook delivery to a fast receiver on this machine, with a long
 * delivered history already in the database, as an instance that has sent webhooks for weeks has.
 *
 *   1. Bulk-load `--wh-history` (default 100,000) finished deliveries into the history
 *      (`webhook_deliveries`), as the store writes them: ~1.3 KB bodies as Castle's, one attempt
 *      each (2% failed after ten), created over the last 29 days.
 *   2. Point the environment's webhook URL at a receiver in this process that answers 200 at once
 *      and notes when each delivery arrived (and any delivery that arrives twice).
 *   3. Burst: `--wh-burst` (default 5,000) deny verdicts through REST /v1/risk at concurrency 16,
 *      five devices per user (a sandbox test token naming the device), so five deliveries per user,
 *      which go out one at a time in creation order. Printed: how many had arrived when the last
 *      verdict answered, and the drain of the rest: deliveries per second from then until the
 *      last one arrived, with Rampart's and the database's CPU per delivery meanwhile.
 *   4. Live: `--wh-rate` (default 100) deny verdicts per second for `--wh-seconds` (default 20),
 *      one user each; printed: the lag from each verdict's answer to its webhook's arrival
 *      (p50, p99, max) and the deliveries still on their way when the verdicts stopped.
 *
 * Deliveries are created by the verdicts, through the code under test (whatever its outbox's
 * layout); only the history is written straight into the database.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { webhookBody } from '../src/core/webhooks/payload';
import type { WebhookDelivery } from '../src/core/webhooks/model';
import { asEnvId } from '../src/core/model';
import { jsonPoster } from './lib/http';
import { closedLoop, openLoop, percentile, type Cpu } from './lib/load';
import type { Endpoints } from './lib/server';

export interface WebhookBenchOptions {
  history: number;
  burst: number;
  rate: number;
  seconds: number;
}

export interface WebhookFigures {
  history: number;
  historyLoadSeconds: number;
  burst: {
    verdicts: number;
    verdictSeconds: number;
    arrivedByLastVerdict: number;
    drained: number;
    drainSeconds: number;
    perSecond: number;
    totalSeconds: number;
    serverCpuPerDelivery: number;
    dbCpuPerDelivery: number;
  };
  live: {
    rate: number;
    seconds: number;
    verdicts: number;
    arrived: number;
    lagP50: number;
    lagP99: number;
    lagMax: number;
    onTheirWayAtEnd: number;
  };
  duplicates: number;
}

interface Io {
  out(s: string): void;
  cpu(): Promise<Cpu>;
  settle(): Promise<void>;
}

const DAY = 86_400_000;
const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

/** A receiver that answers 200 at once and notes when each delivery (by user id) arrived. */
class Receiver {
  /** Arrival time (performance.now()) by user id; several per user in the burst, the last kept. */
  readonly arrivedAt = new Map<string, number>();
  readonly ids = new Set<string>();
  arrived = 0;
  duplicates = 0;
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.statusCode = 200;
      res.end();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        data: { id: string; user_id: string | null };
      };
      if (this.ids.has(body.data.id)) this.duplicates++;
      else {
        this.ids.add(body.data.id);
        this.arrived++;
        if (body.data.user_id) this.arrivedAt.set(body.data.user_id, performance.now());
      }
    });
  });
  url = '';
  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A delivered (or failed) delivery of the history, as the store keeps it. */
function historyDoc(envId: string, i: number, now: number): Record<string, unknown> {
  const id = randomUUID();
  const createdAt = new Date(now - 29 * DAY + Math.floor(Math.random() * 29 * DAY));
  const userId = `wh-history-${i % 20_000}`;
  const body = JSON.stringify(
    webhookBody(
      id,
      {
        type: '$incident.confirmed',
        appId: asEnvId(envId),
        userId,
        device: null,
        trigger: 'verdict_deny',
        context: {
          ip: '81.2.69.142',
          userAgent: {
            raw: UA,
            browser: 'Chrome',
            version: '124.0',
            os: 'Mac OS X 10.15.7',
            mobile: false,
            platform: 'Mac OS X',
            device: 'Unknown',
            family: 'Chrome',
            type: 'desktop',
            bot: false,
            headless: false,
            crawler: false,
          },
          location: {
            country_code: 'GB',
            country: 'United Kingdom',
            region: 'England',
            region_code: 'ENG',
            city: 'London',
            lat: 51.5,
            lon: -0.12,
          },
        },
        policy: {
          id: '00000000-0000-0000-0000-000000000003',
          revision: '00000000-0000-0000-0000-000000000003',
          name: 'Deny high risk',
          action: 'deny',
        },
        userTraits: { email: `${userId}@example.com` },
        properties: {},
        at: createdAt,
      },
      createdAt,
    ),
  );
  const failed = i % 50 === 0;
  const attempts = Array.from({ length: failed ? 10 : 1 }, (_, n) => ({
    at: new Date(createdAt.getTime() + n * 60_000),
    statusCode: failed ? 503 : 200,
    error: null,
    durationMs: 12,
    instance: 'bench',
    url: 'http://127.0.0.1:1/hooks',
  }));
  const d: Omit<WebhookDelivery, 'id'> = {
    envId: asEnvId(envId),
    userId,
    deviceToken: null,
    type: '$incident.confirmed',
    trigger: 'verdict_deny',
    url: 'http://127.0.0.1:1/hooks',
    body,
    status: failed ? 'failed' : 'delivered',
    attempts,
    maxAttempts: 10,
    nextAttemptAt: null,
    leaseOwner: null,
    leaseUntil: null,
    leaseVersion: attempts.length,
    createdAt,
    seq: 0,
    deliveredAt: failed ? null : attempts[0]!.at,
    lastError: failed ? 'HTTP 503' : null,
    test: false,
  };
  return { _id: id, ...d };
}

const ms = (n: number) => `${n.toFixed(0)} ms`;

export async function benchWebhooks(e: Endpoints, o: WebhookBenchOptions, io: Io): Promise<WebhookFigures> {
  const out = io.out;
  out(
    `\nWebhooks: delivery to a receiver on this machine answering 200 at once, with ${o.history.toLocaleString('en')} finished deliveries in the history\n`,
  );
  const client = await new MongoClient(e.dbUri, { serverSelectionTimeoutMS: 5000 }).connect();
  const receiver = new Receiver();
  await receiver.start();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const post = jsonPoster(agent, e.secret);
  try {
    // 1. The history.
    const t0 = performance.now();
    const history = client.db(e.dbName).collection('webhook_deliveries');
    const now = Date.now();
    const BATCH = 1_000;
    for (let i = 0; i < o.history; i += BATCH) {
      const docs = Array.from({ length: Math.min(BATCH, o.history - i) }, (_, k) =>
        historyDoc(e.envId, i + k, now),
      );
      await history.insertMany(docs as never[], { ordered: false });
    }
    const historyLoadSeconds = (performance.now() - t0) / 1000;
    out(`  history loaded in ${historyLoadSeconds.toFixed(1)} s\n`);

    // 2. The receiver.
    const set = await post(new URL('/graphql', e.rest), {
      query: `mutation { setWebhookUrl(url: ${JSON.stringify(receiver.url)}) { webhookUrl } }`,
    });
    if (set.status !== 200) throw new Error(`setWebhookUrl answered ${set.status}`);
    await io.settle();

    const risk = new URL('/v1/risk', e.rest);
    const deny = (user: string, device: string) =>
      post(risk, {
        event: '$login',
        user: { id: user, email: `${user}@example.com` },
        request_token: `test|device:${device}|policy.action:deny`,
        context: { ip: '81.2.69.142', headers: { 'User-Agent': UA, Accept: 'text/html' } },
      }).then((a) => a.status === 201);

    // 3. The burst: five deliveries per user.
    const users = Math.max(1, Math.floor(o.burst / 5));
    const burstStart = performance.now();
    const verdicts = await closedLoop(users * 5, 16, (i) =>
      deny(`wh-burst-${i % users}`, `d${Math.floor(i / users)}`),
    );
    const lastVerdict = performance.now();
    const cpu0 = await io.cpu();
    const arrivedByLastVerdict = receiver.arrived;
    const expected = users * 5 - verdicts.errors;
    const deadline = lastVerdict + 20 * 60_000;
    while (receiver.arrived < expected && performance.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    const lastArrival = performance.now();
    const cpu1 = await io.cpu();
    const drained = receiver.arrived - arrivedByLastVerdict;
    const drainSeconds = (lastArrival - lastVerdict) / 1000;
    const burst = {
      verdicts: users * 5,
      verdictSeconds: (lastVerdict - burstStart) / 1000,
      arrivedByLastVerdict,
      drained,
      drainSeconds,
      perSecond: drained / Math.max(drainSeconds, 1e-3),
      totalSeconds: (lastArrival - burstStart) / 1000,
      serverCpuPerDelivery: (cpu1.server - cpu0.server) / Math.max(1, drained),
      dbCpuPerDelivery: (cpu1.db - cpu0.db) / Math.max(1, drained),
    };
    out(
      `  burst: ${burst.verdicts} deny verdicts (${users} users, 5 devices each) in ${burst.verdictSeconds.toFixed(1)} s (${verdicts.errors} errors); ${arrivedByLastVerdict} webhooks had arrived by the last answer\n`,
    );
    out(
      `    the other ${drained} arrived in ${drainSeconds.toFixed(1)} s: ${burst.perSecond.toFixed(burst.perSecond < 10 ? 3 : 0)} deliveries/s (Rampart ${burst.serverCpuPerDelivery.toFixed(0)} µs, database ${burst.dbCpuPerDelivery.toFixed(0)} µs of CPU per delivery); ${receiver.arrived} of ${expected} in ${burst.totalSeconds.toFixed(1)} s from the first verdict\n`,
    );

    // 4. Live: one delivery per verdict, at a steady rate.
    const answeredAt = new Map<string, number>();
    const liveVerdicts = await openLoop(o.rate, o.seconds, async (i) => {
      const user = `wh-live-${i}`;
      const ok = await deny(user, 'live');
      answeredAt.set(user, performance.now());
      return ok;
    });
    const stopped = performance.now();
    const onTheirWay = [...answeredAt.keys()].filter((u) => !receiver.arrivedAt.has(u)).length;
    const liveDeadline = stopped + 10 * 60_000;
    while ([...answeredAt.keys()].some((u) => !receiver.arrivedAt.has(u)) && performance.now() < liveDeadline)
      await new Promise((r) => setTimeout(r, 20));
    const lags = [...answeredAt]
      .filter(([u]) => receiver.arrivedAt.has(u))
      .map(([u, at]) => (receiver.arrivedAt.get(u) as number) - at)
      .sort((a, b) => a - b);
    const live = {
      rate: o.rate,
      seconds: o.seconds,
      verdicts: liveVerdicts.count,
      arrived: lags.length,
      lagP50: percentile(lags, 50),
      lagP99: percentile(lags, 99),
      lagMax: lags[lags.length - 1] ?? NaN,
      onTheirWayAtEnd: onTheirWay,
    };
    out(
      `  live: ${o.rate} deny verdicts/s for ${o.seconds} s (${liveVerdicts.errors} errors): ${live.arrived} of ${live.verdicts} webhooks arrived; from the verdict's answer to the webhook's arrival p50 ${ms(live.lagP50)}, p99 ${ms(live.lagP99)}, max ${ms(live.lagMax)}; ${onTheirWay} on their way when the verdicts stopped\n`,
    );
    if (receiver.duplicates > 0) out(`  ${receiver.duplicates} deliveries arrived more than once\n`);
    return { history: o.history, historyLoadSeconds, burst, live, duplicates: receiver.duplicates };
  } finally {
    agent.destroy();
    await receiver.close();
    await client.close();
  }
}
