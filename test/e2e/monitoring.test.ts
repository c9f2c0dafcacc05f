/**
 * Metrics for on-call, through the real runtime (app/runtime.ts `run`, as `npm start` runs it, on
 * the suite's database): REST, gRPC (unary, client stream and VerdictStream), GraphQL and the
 * console answer real calls, good and with bad secrets and past a low rate limit; a webhook
 * receiver fails and then answers; and GET /metrics, scraped over HTTP, says so per door, per
 * method and per status. Then the alerting rules and the Grafana dashboard in deploy/monitoring
 * are checked against what the running service exposes, so that neither can drift from it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/app/logger';
import { run, type Running } from '../../src/app/runtime';
import { createRampartClient, type RampartClient } from '../../src/client';
import { call } from '../support/app';
import { failure } from '../support/grpc';
import { sampleValue, scrapeUntil as pollScrape } from '../support/metrics';

const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36';
const context = { ip: '81.2.69.142', headers: { 'User-Agent': UA } };
const grpcContext = { ip: '81.2.69.142', headers: { 'User-Agent': UA }, clientId: 'cid-mon-grpc' };
const ROOT = path.resolve(__dirname, '..', '..');
/** Requests per second per environment (burst twice that): low, so that a burst meets it. */
const RATE = 20;

let dir: string;
let dbName: string;
let running: Running;
let app: { baseUrl: string; secret: string };
/** An environment of its own for the rate limit, so that the sandbox's traffic never meets it. */
let throttled: string;
let unary: RampartClient;
let streams: RampartClient;
let receiver: http.Server;
/** What the webhook receiver answers, and what it was sent. */
const hooks = { status: 500, received: 0 };

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hooks.received++;
      res.writeHead(hooks.status).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  dir = mkdtempSync(path.join(tmpdir(), 'rampart-monitoring-'));
  dbName = `rampart_test_monitoring_${randomBytes(4).toString('hex')}`;
  const secret = `sk_test_${randomBytes(16).toString('hex')}`;
  const config = loadConfig({
    MONGODB_URI: process.env.MONGODB_URI,
    RAMPART_DB_NAME: dbName,
    RAMPART_DATA_DIR: dir,
    RAMPART_HTTP_PORT: '0',
    RAMPART_GRPC_PORT: '0',
    RAMPART_API_SECRET: secret,
    RAMPART_WEBHOOK_URL: hookUrl,
    RAMPART_RATE_LIMIT: String(RATE),
    // Every call here comes from 127.0.0.1: the failed-authentication throttle must not close it.
    RAMPART_AUTH_FAILURE_LIMIT: '100000',
    // Not a test of overload: a loaded machine must not turn its calls into 503s.
    RAMPART_MAX_UNWRITTEN_MS: '60000',
    RAMPART_QUEUE_WAIT_MS: '600000',
    RAMPART_MAX_LOOP_DELAY_MS: '0',
    RAMPART_LOG_LEVEL: 'silent',
  });
  running = await run(config, createLogger('silent'));
  app = { baseUrl: running.httpUrl, secret };
  throttled = (await running.built.services.environments.create('throttled', { sandbox: true })).secret;
  unary = createRampartClient({
    address: running.grpcAddress,
    secret,
    verdictStreams: 0,
    deadlineMs: 10_000,
  });
  streams = createRampartClient({
    address: running.grpcAddress,
    secret,
    verdictStreams: 1,
    deadlineMs: 10_000,
  });
});

afterAll(async () => {
  unary?.close();
  streams?.close();
  await running?.stop();
  await new Promise((resolve) => receiver?.close(resolve));
  if (process.env.MONGODB_URI && dbName) {
    const client = new MongoClient(process.env.MONGODB_URI);
    await client
      .db(dbName)
      .dropDatabase()
      .catch(() => undefined);
    await client.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

/** One scrape of GET /metrics over HTTP: the exposition text. */
async function scrape(): Promise<string> {
  const res = await fetch(`${app.baseUrl}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

const value = (text: string, series: string): number => sampleValue(text, series);
const scrapeUntil = (done: (text: string) => boolean): Promise<string> => pollScrape(scrape, done);

const requests = (door: string, route: string, status: string | number) =>
  `rampart_request_duration_seconds_count{door="${door}",route="${route}",status="${status}"}`;
const authFailures = (door: string) => `rampart_auth_failures_total{door="${door}"}`;
const rateLimited = (door: string) => `rampart_rate_limited_total{door="${door}"}`;
const graphql = (secret: string) =>
  call(app, 'POST', '/graphql', { query: '{ viewer { canMutate } }' }, { secret });
const signIn = (key: string) => call(app, 'POST', '/console/session', { key }, { secret: null });

describe('GET /metrics of a running Rampart', () => {
  it('times every door: REST, each gRPC method (VerdictStream per call), GraphQL and the console', async () => {
    const before = await scrape();
    expect(
      (await call(app, 'POST', '/v1/risk', { event: '$login', user: { id: 'mon-1' }, context })).status,
    ).toBe(201);
    await unary.risk({ event: '$login', user: { id: 'mon-1' }, context: grpcContext });
    await streams.risk({ event: '$login', user: { id: 'mon-1' }, context: grpcContext });
    await streams.authenticate({ event: '$login.succeeded', user: { id: 'mon-1' }, context: grpcContext });
    await unary.track({ event: '$login.failed', user: { id: 'mon-1' }, context: grpcContext });
    await unary.trackStream([{ event: '$login.failed', user: { id: 'mon-1' }, context: grpcContext }]);
    await unary.listUserDevices({ userId: 'mon-1' });
    expect((await graphql(app.secret)).status).toBe(200);
    expect((await signIn(app.secret)).status).toBe(201);
    const after = await scrape();

    const delta = (series: string) => value(after, series) - value(before, series);
    expect(delta(requests('rest', '/v1/risk', 201))).toBe(1);
    expect(delta(requests('grpc', '/rampart.v1.Scoring/Risk', 'OK'))).toBe(1);
    expect(delta(requests('grpc', '/rampart.v1.Scoring/VerdictStream', 'OK'))).toBe(2);
    expect(delta(requests('grpc', '/rampart.v1.Scoring/Track', 'OK'))).toBe(1);
    expect(delta(requests('grpc', '/rampart.v1.Scoring/TrackStream', 'OK'))).toBe(1);
    expect(delta(requests('grpc', '/rampart.v1.Devices/ListUserDevices', 'OK'))).toBe(1);
    expect(delta(requests('graphql', '/graphql', 200))).toBe(1);
    expect(delta(requests('console', '/console/session', 201))).toBe(1);
    // Each gRPC verdict is a verdict as a REST one is, and is timed by its door too.
    // (Whatever the engine made of them, and degraded or not on a loaded machine: three risk verdicts.)
    const riskVerdicts = ['allow', 'challenge', 'deny'].flatMap((action) =>
      ['false', 'true'].map(
        (degraded) =>
          delta(`rampart_verdicts_total{endpoint="risk",action="${action}",degraded="${degraded}"}`) || 0,
      ),
    );
    expect(riskVerdicts.reduce((a, b) => a + b, 0)).toBe(3);
    expect(
      value(
        after,
        'rampart_request_duration_seconds_sum{door="grpc",route="/rampart.v1.Scoring/Risk",status="OK"}',
      ),
    ).toBeGreaterThan(0);
    // No label carries a user, a secret or an address.
    expect(after).not.toContain('mon-1');
    expect(after).not.toContain(app.secret);
    expect(after).not.toContain('127.0.0.1');
  });

  it('counts refused credentials on every door', async () => {
    const wrong = `sk_test_${randomBytes(16).toString('hex')}`;
    const before = await scrape();
    expect(
      (
        await call(
          app,
          'POST',
          '/v1/risk',
          { event: '$login', user: { id: 'mon-2' }, context },
          { secret: wrong },
        )
      ).status,
    ).toBe(401);
    expect((await call(app, 'GET', '/v1/users/mon-2/devices', undefined, { secret: null })).status).toBe(401);
    const badGrpc = createRampartClient({ address: running.grpcAddress, secret: wrong, verdictStreams: 0 });
    try {
      expect(
        (await failure(badGrpc.risk({ event: '$login', user: { id: 'mon-2' }, context: grpcContext })))
          .codeName,
      ).toBe('UNAUTHENTICATED');
    } finally {
      badGrpc.close();
    }
    expect((await graphql(wrong)).status).toBe(401);
    expect((await signIn(wrong)).status).toBe(401);
    const after = await scrape();

    const delta = (series: string) => value(after, series) - value(before, series);
    expect(delta(authFailures('rest'))).toBe(2);
    expect(delta(authFailures('grpc'))).toBe(1);
    expect(delta(authFailures('graphql'))).toBe(1);
    expect(delta(authFailures('console'))).toBe(1);
    expect(delta(requests('grpc', '/rampart.v1.Scoring/Risk', 'UNAUTHENTICATED'))).toBe(1);
    expect(after).not.toContain(wrong);
  });

  it('counts 429s on every door, one for each the callers were answered', async () => {
    const burst = async (send: () => Promise<boolean>) =>
      (await Promise.all(Array.from({ length: 4 * RATE }, send))).filter(Boolean).length;
    const before = await scrape();
    const rest = await burst(
      async () =>
        (
          await call(
            app,
            'POST',
            '/v1/track',
            { event: '$login.failed', user_id: 'mon-3', context },
            { secret: throttled },
          )
        ).status === 429,
    );
    const grpcClient = createRampartClient({
      address: running.grpcAddress,
      secret: throttled,
      verdictStreams: 0,
      deadlineMs: 10_000,
    });
    let grpc: number;
    try {
      grpc = await burst(async () => {
        try {
          await grpcClient.track({ event: '$login.failed', user: { id: 'mon-3' }, context: grpcContext });
          return false;
        } catch (err) {
          return (err as { codeName?: string }).codeName === 'RESOURCE_EXHAUSTED';
        }
      });
    } finally {
      grpcClient.close();
    }
    const gql = await burst(async () => (await graphql(throttled)).status === 429);
    const console = await burst(async () => (await signIn(throttled)).status === 429);
    const after = await scrape();

    // Four times the rate at once is past its burst (twice the rate) on each door.
    for (const seen of [rest, grpc, gql, console]) expect(seen).toBeGreaterThan(0);
    const delta = (series: string) => value(after, series) - value(before, series);
    expect(delta(rateLimited('rest'))).toBe(rest);
    expect(delta(rateLimited('grpc'))).toBe(grpc);
    expect(delta(rateLimited('graphql'))).toBe(gql);
    expect(delta(rateLimited('console'))).toBe(console);
  });

  it('shows the webhook outbox filling while the receiver fails, its failures by status, and the outbox emptying once it answers', async () => {
    const verdict = await call(app, 'POST', '/v1/authenticate', {
      event: '$login.succeeded',
      user_id: 'mon-hook',
      context: { ...context, client_id: 'cid-mon-hook' },
    });
    expect(verdict.status).toBe(201);
    const before = await scrape();
    expect(value(before, 'rampart_webhook_outbox_depth')).toBe(0);
    hooks.status = 500;
    expect((await call(app, 'PUT', `/v1/devices/${verdict.body.device_token}/report`)).status).toBe(200);

    // The first attempt fails: the delivery stays in the outbox for its retry.
    const failing = await scrapeUntil(
      (t) => value(t, 'rampart_webhook_delivery_failures_total{status="500"}') > 0,
    );
    expect(hooks.received).toBeGreaterThan(0);
    expect(value(failing, 'rampart_webhook_delivery_failures_total{status="500"}')).toBeGreaterThanOrEqual(1);
    expect(value(failing, 'rampart_webhook_attempts_total')).toBeGreaterThanOrEqual(1);
    expect(value(failing, 'rampart_webhook_outbox_depth')).toBe(1);
    expect(value(failing, 'rampart_webhook_outbox_oldest_age_seconds')).toBeGreaterThan(0);

    // The receiver answers: the retry delivers it, and the outbox is empty again.
    hooks.status = 204;
    const delivered = await scrapeUntil((t) => value(t, 'rampart_webhook_outbox_depth') === 0);
    expect(value(delivered, 'rampart_webhook_outbox_depth')).toBe(0);
    expect(value(delivered, 'rampart_webhook_outbox_oldest_age_seconds')).toBe(0);
    expect(value(delivered, 'rampart_webhook_attempts_total')).toBeGreaterThan(
      value(failing, 'rampart_webhook_attempts_total'),
    );
    expect(value(delivered, 'rampart_webhook_deliveries_given_up_total')).toBe(0);
  });

  it('shows the database up, its probe, and the write queue beside its marks', async () => {
    const text = await scrapeUntil((t) => value(t, 'rampart_database_probe_duration_seconds_count') > 0);
    expect(value(text, 'rampart_database_up')).toBe(1);
    expect(value(text, 'rampart_database_probe_duration_seconds_count')).toBeGreaterThan(0);
    expect(value(text, 'rampart_state_max_unwritten_seconds')).toBe(60);
    expect(value(text, 'rampart_state_oldest_unwritten_seconds')).toBeGreaterThanOrEqual(0);
    expect(value(text, 'rampart_state_writes_stuck_seconds')).toBe(0);
    expect(text).toMatch(/^# TYPE rampart_state_flush_stalls_total counter$/m);
    expect(value(text, 'rampart_state_write_queue_limit')).toBe(100_000);
    expect(text).toMatch(/^# TYPE rampart_state_flush_errors_total counter$/m);
    expect(text).toMatch(/^# TYPE rampart_state_dropped_writes_total counter$/m);
  });
});

/** Metric family names and types, from the `# TYPE` lines of an exposition. */
function families(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(m[1] as string, m[2] as string);
  return out;
}

/** Whether `name`, as a PromQL expression may use it, is a series the exposition has. */
function exposed(name: string, types: Map<string, string>): boolean {
  if (types.has(name)) return types.get(name) !== 'histogram'; // a histogram has only its _bucket, _sum and _count
  const base = /^(.*)_(bucket|sum|count)$/.exec(name)?.[1];
  return base !== undefined && (types.get(base) === 'histogram' || types.get(base) === 'summary');
}

/** The metric names an expression uses (every Rampart metric starts with `rampart_`). */
const metricNames = (expr: string): string[] => [...new Set(expr.match(/\brampart_[a-zA-Z0-9_]+/g) ?? [])];

interface Rule {
  alert?: unknown;
  expr?: unknown;
  for?: unknown;
  labels?: { severity?: unknown };
  annotations?: { summary?: unknown };
}
interface Panel {
  type?: string;
  title?: string;
  targets?: { expr?: unknown }[];
  panels?: Panel[];
}

describe('deploy/monitoring', () => {
  const alerts = parseYaml(readFileSync(path.join(ROOT, 'deploy/monitoring/alerts.yaml'), 'utf8')) as {
    groups?: { name?: unknown; rules?: Rule[] }[];
  };
  const dashboard = JSON.parse(
    readFileSync(path.join(ROOT, 'deploy/monitoring/grafana-dashboard.json'), 'utf8'),
  ) as { title?: unknown; uid?: unknown; panels?: Panel[] };
  const rules = (alerts.groups ?? []).flatMap((g) => g.rules ?? []);
  const panels = (dashboard.panels ?? [])
    .flatMap((p) => [p, ...(p.panels ?? [])])
    .filter((p) => p.type !== 'row');

  it('has alerting rules, each with alert, expr, for, a severity and a summary', () => {
    expect(rules.length).toBeGreaterThan(0);
    for (const r of rules) {
      expect({
        alert: typeof r.alert,
        expr: typeof r.expr,
        for: typeof r.for,
        severity: typeof r.labels?.severity,
        summary: typeof r.annotations?.summary,
      }).toEqual({ alert: 'string', expr: 'string', for: 'string', severity: 'string', summary: 'string' });
      expect(['critical', 'warning', 'info']).toContain(r.labels?.severity);
      expect(r.for).toMatch(/^\d+[smh]$/);
    }
    const names = rules.map((r) => r.alert);
    expect(new Set(names).size).toBe(names.length);
  });

  it('has a Grafana dashboard whose every panel queries Prometheus', () => {
    expect(typeof dashboard.title).toBe('string');
    expect(typeof dashboard.uid).toBe('string');
    expect(panels.length).toBeGreaterThan(0);
    for (const p of panels) {
      expect({ title: p.title, targets: (p.targets ?? []).length > 0 }).toEqual({
        title: p.title,
        targets: true,
      });
      for (const t of p.targets ?? []) expect(typeof t.expr === 'string' && t.expr.length > 0).toBe(true);
    }
  });

  it('names only metrics that a running Rampart exposes', async () => {
    const types = families(await scrape());
    const used = new Set(
      [
        ...rules.map((r) => String(r.expr)),
        ...panels.flatMap((p) => (p.targets ?? []).map((t) => String(t.expr))),
      ].flatMap(metricNames),
    );
    expect(used.size).toBeGreaterThan(10);
    expect([...used].filter((name) => !exposed(name, types))).toEqual([]);
  });
});
