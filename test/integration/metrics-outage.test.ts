/**
 * The database's metrics while it hangs, through the real runtime on its own embedded FerretDB
 * (as `npm start` runs): the FerretDB process is stopped (SIGSTOP) with writes queued, and
 * GET /metrics, scraped over HTTP all along, keeps answering from memory, says the database is
 * down, the write queue holds what it could not write and the flush failed, and still gives the
 * sizes of the database's files; once the process continues (SIGCONT), it says the database is
 * up again and the queue drains. A track event sent while it hangs is not acknowledged (a 2xx
 * means stored): it is answered 503 with Retry-After, and written once the database is back.
 */
import { readFileSync } from 'node:fs';
import { embeddedInfoFile } from '../../src/store/embedded';
import { call } from '../support/app';
import { startTempRuntime, type TempRuntime } from '../support/runtime';
import { sampleValue, scrapeUntil as pollScrape } from '../support/metrics';
import { stopped } from '../support/process';

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;
const UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36';
const context = { ip: '81.2.69.160', headers: { 'User-Agent': UA } };

const DATABASE_BYTES = 'rampart_embedded_database_bytes{database="rampart_test_metrics_outage"}';
const WAL_BYTES = 'rampart_embedded_wal_bytes{database="rampart_test_metrics_outage"}';

/** The value of the sample `series` (name and labels exactly as exposed), NaN when absent. */
const value = (text: string, series: string): number => sampleValue(text, series, NaN);

embeddedOnly('GET /metrics while the embedded database hangs', () => {
  let runtime: TempRuntime | null = null;
  let app: { baseUrl: string; secret: string };
  /** Every scrape's status: each must be 200, answered while the database hangs too. */
  const statuses: number[] = [];

  beforeAll(async () => {
    runtime = await startTempRuntime('metrics-outage-', {
      RAMPART_DB_NAME: 'rampart_test_metrics_outage',
      // Dashboards read through the primary: no second FerretDB to start for this test.
      RAMPART_ANALYST_READER: 'shared',
      // The watchdog gives a hung flush up after two seconds rather than ten.
      RAMPART_WRITE_TIMEOUT_MS: '2000',
    });
    app = runtime.app;
  });

  afterAll(async () => {
    await runtime?.stop();
  });

  /** One scrape over HTTP; a scrape that hung would fail here rather than hold the test. */
  async function scrape(): Promise<string> {
    const res = await fetch(`${app.baseUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
    statuses.push(res.status);
    return res.text();
  }

  const scrapeUntil = (done: (text: string) => boolean, what: string): Promise<string> =>
    pollScrape(scrape, done, what);

  it('says the database is down and holds the writes while it hangs, answering every scrape, and up again once it continues', async () => {
    // A verified credential, so that calls during the hang are answered from memory.
    expect(
      (await call(app, 'POST', '/v1/risk', { event: '$login', user: { id: 'outage-1' }, context })).status,
    ).toBe(201);
    const up = await scrapeUntil(
      (t) =>
        value(t, 'rampart_database_probe_duration_seconds_count') > 0 &&
        value(t, 'rampart_state_write_backlog') === 0 &&
        value(t, DATABASE_BYTES) > 0,
      "a database probe, an empty write queue and the database file's size",
    );
    expect(value(up, 'rampart_database_up')).toBe(1);
    expect(value(up, 'rampart_state_write_backlog')).toBe(0);
    // The embedded database's files, as read from the file system, and the log's limit.
    expect(value(up, DATABASE_BYTES)).toBeGreaterThan(0);
    expect(value(up, WAL_BYTES)).toBeGreaterThanOrEqual(0);
    expect(value(up, 'rampart_embedded_wal_limit_bytes{database="rampart_test_metrics_outage"}')).toBe(
      64 * 1024 * 1024,
    );
    const probesBefore = value(up, 'rampart_database_probe_duration_seconds_count');

    const { ferretdbPid: pid } = JSON.parse(
      readFileSync(embeddedInfoFile((runtime as TempRuntime).dir), 'utf8'),
    ) as { ferretdbPid: number };
    process.kill(pid, 'SIGSTOP');
    let hung: string;
    let failing: string;
    try {
      await stopped(pid);
      // Not acknowledged, since it cannot be stored: refused with a time to come back, its
      // write queued for when the database answers again.
      const refused = await call(app, 'POST', '/v1/track', {
        event: '$login.failed',
        user_id: 'outage-1',
        context,
      });
      expect(refused.status).toBe(503);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      hung = await scrapeUntil(
        (t) => value(t, 'rampart_database_up') === 0 && value(t, 'rampart_state_write_backlog') > 0,
        'the database down with writes queued',
      );
      // The watchdog gives up the flush under way (RAMPART_WRITE_TIMEOUT_MS) and its writes stay
      // queued.
      failing = await scrapeUntil((t) => value(t, 'rampart_state_flush_errors_total') > 0, 'a failed flush');
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect(value(hung, 'rampart_database_up')).toBe(0);
    expect(value(hung, 'rampart_state_write_backlog')).toBeGreaterThan(0);
    // The files' sizes never ask the database: they are there while it hangs.
    expect(value(hung, DATABASE_BYTES)).toBeGreaterThan(0);
    expect(value(hung, WAL_BYTES)).toBeGreaterThanOrEqual(0);
    expect(value(failing, 'rampart_state_flush_errors_total')).toBeGreaterThan(0);
    expect(value(failing, 'rampart_state_write_backlog')).toBeGreaterThan(0);

    const back = await scrapeUntil(
      (t) => value(t, 'rampart_database_up') === 1 && value(t, 'rampart_state_write_backlog') === 0,
      'the database up again and the write queue drained',
    );
    expect(value(back, 'rampart_database_up')).toBe(1);
    expect(value(back, 'rampart_state_write_backlog')).toBe(0);
    expect(value(back, 'rampart_database_probe_duration_seconds_count')).toBeGreaterThan(probesBefore);
    expect(statuses.length).toBeGreaterThan(2);
    expect(statuses.every((s) => s === 200)).toBe(true);
  });
});
