/**
 * The overview reads rollups: events sent over REST at known times (a manual clock) are counted
 * into hour and minute rollups, and GraphQL's `analytics` for a time range alone answers from
 * them exactly what a scan of the events answers: totals, verdicts, signals, top addresses and
 * countries, and the hourly series, over a range with partial hours at both ends. With the events
 * themselves deleted, the range is still answered (from the rollups), while a range that rollups
 * do not cover exactly (not on a minute boundary) is answered by scanning the events.
 */
import { call, startTestApp, type TestApp } from '../support/app';

const UA = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36';
const T0 = Date.parse('2026-03-02T00:00:30Z');
const at = (iso: string) => Date.parse(`2026-03-02T${iso}Z`);

let now = T0;
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ grpc: false, clock: { now: () => new Date(now) }, rollupPushEveryMs: 1 });
});
afterAll(async () => {
  await app?.close();
});

const QUERY = `query Overview($filter: EventFilter) {
  analytics(filter: $filter) {
    total
    actions { action count }
    signals(first: 20) { signal count }
    ips: top(dimension: IP, first: 5) { distinct entries { key count } }
    countries: top(dimension: COUNTRY, first: 5) { distinct entries { key count } }
    timeSeries(bucket: HOUR) { buckets { start total actions { action count } } }
  }
}`;

async function overview(from: number, to: number): Promise<unknown> {
  const r = await call(app, 'POST', '/graphql', { query: QUERY, variables: { filter: { from: new Date(from).toISOString(), to: new Date(to).toISOString() } } });
  expect(r.body.errors).toBeUndefined();
  return r.body.data.analytics;
}

it('answers a time range from the rollups exactly as from the events', async () => {
  // The first event starts the rollups at the next minute (00:01).
  expect((await call(app, 'POST', '/v1/track', { event: '$login.failed', user_id: 'early', context: { ip: '81.2.69.1', headers: { 'User-Agent': UA } } })).status).toBe(204);
  const sends: [string, string, string][] = [
    ['00:05:00', '81.2.69.160', '$login.failed'],
    ['00:59:59', '81.2.69.160', '$login'],
    ['01:00:00', '2.125.160.216', '$login'],
    ['01:30:00', '81.2.69.160', '$login'],
    ['02:10:00', '175.16.199.1', '$login'],
    ['03:45:10', '2.125.160.216', '$login.failed'],
    ['03:59:00', '89.160.20.112', '$login'],
  ];
  for (const [i, [time, ip, event]] of sends.entries()) {
    now = at(time);
    const context = { ip, headers: { 'User-Agent': UA } };
    const r =
      event === '$login'
        ? await call(app, 'POST', '/v1/risk', { event, status: '$succeeded', user: { id: `u${i % 3}` }, context, request_token: `test|device:d${i}` })
        : await call(app, 'POST', '/v1/track', { event, user_id: `u${i % 3}`, context });
    expect(r.status).toBeLessThan(300);
  }
  await app.built.services.track.drain(false);
  await new Promise((r) => setTimeout(r, 20));
  await app.built.state.flush();

  // 00:02 to 03:50: partial hours at both ends, whole hours between.
  const from = at('00:02:00');
  const to = at('03:50:00');
  const fromRollups = (await overview(from, to)) as { total: number };
  // One millisecond later is not a minute boundary: answered by scanning the events.
  const fromEvents = await overview(from + 1, to);
  expect(fromRollups.total).toBe(6);
  expect(fromRollups).toEqual(fromEvents);

  // With the events gone, the rollups still answer; the scan finds nothing.
  await app.database.db.collection('events').deleteMany({ envId: app.env.id });
  expect(((await overview(from, to)) as { total: number }).total).toBe(6);
  expect(((await overview(from + 1, to)) as { total: number }).total).toBe(0);
  // A range that begins before the rollups did (00:00) is answered from the events.
  expect(((await overview(at('00:00:00'), to)) as { total: number }).total).toBe(0);
});
