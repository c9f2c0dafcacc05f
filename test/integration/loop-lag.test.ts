/**
 * The load shedder's measure (src/app/loop-lag.ts) and its wiring in the runtime: an event loop
 * whose every turn runs long (more work than CPU) is seen as behind, and while it is, Rampart as
 * `npm start` runs it refuses new API requests with 503 and Retry-After and says so on /readyz;
 * once the loop runs freely again, both recover by themselves. A single long pause is not taken
 * for overload.
 */
import { LoopLag } from '../../src/app/loop-lag';
import { call } from '../support/app';
import { startTempRuntime, type TempRuntime } from '../support/runtime';
import { waitFor } from '../support/wait';

/** Keeps every turn of the event loop busy for `turnMs` until `until()` says stop. */
function hogTheLoop(turnMs: number, until: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const turn = () => {
      if (until()) return resolve();
      const end = Date.now() + turnMs;
      while (Date.now() < end) {
        // busy
      }
      setImmediate(turn);
    };
    setImmediate(turn);
  });
}

describe('LoopLag', () => {
  it('is behind while every turn runs long, refusing a share of requests that grows with the delay, and not once it catches up', async () => {
    const lag = new LoopLag(100, 100);
    try {
      expect(lag.behind()).toBeNull();
      expect(lag.shedShare()).toBe(0);
      let seen: string | null = null;
      await hogTheLoop(250, () => (seen = lag.behind()) !== null);
      expect(seen).toMatch(/^overloaded: the service ran \d+ ms behind in the last 2 s$/);
      expect(lag.lagMs).toBeGreaterThan(100);
      // Past the bound, a share of the requests is refused: one whose draw falls below it.
      const share = lag.shedShare();
      expect(share).toBeGreaterThan(0);
      expect(lag.overloaded(() => 0)).toMatch(/^overloaded: /);
      expect(lag.overloaded(() => share)).toBeNull();
      // Behind all the time (twice the bound and more), every request is refused.
      let turns = 0;
      await hogTheLoop(250, () => ++turns > 12);
      expect(lag.shedShare()).toBe(1);
      expect(lag.overloaded(() => 0.999)).toMatch(/^overloaded: /);
      await waitFor(() => lag.behind() === null && lag.shedShare() === 0, {
        what: 'the delay to fall back once the loop runs freely',
        timeoutMs: 60_000,
      });
      expect(lag.overloaded(() => 0)).toBeNull();
    } finally {
      lag.stop();
    }
  });

  it('does not take one long pause for overload', async () => {
    // (A bound with room for a busy machine's own timer lateness beside the pause.)
    const lag = new LoopLag(1500, 100);
    try {
      await new Promise((r) => setTimeout(r, 700));
      const end = Date.now() + 500;
      while (Date.now() < end) {
        // one long pause, as a large collection makes
      }
      await new Promise((r) => setTimeout(r, 250));
      expect(lag.behind()).toBeNull();
      expect(lag.overloaded(() => 0)).toBeNull();
    } finally {
      lag.stop();
    }
  });

  it('is never overloaded with a bound of 0', async () => {
    const lag = new LoopLag(0, 100);
    try {
      let turns = 0;
      await hogTheLoop(150, () => ++turns > 6);
      expect(lag.lagMs).toBeGreaterThan(0);
      expect(lag.behind()).toBeNull();
      expect(lag.overloaded(() => 0)).toBeNull();
    } finally {
      lag.stop();
    }
  });
});

const embeddedOnly = process.env.RAMPART_TEST_EMBEDDED === '1' ? describe : describe.skip;

embeddedOnly('the runtime behind its event loop', () => {
  let runtime: TempRuntime | null = null;
  let app: { baseUrl: string; secret: string };

  beforeAll(async () => {
    runtime = await startTempRuntime('loop-lag-', {
      RAMPART_DB_NAME: 'rampart_test_loop_lag',
      RAMPART_ANALYST_READER: 'shared',
      RAMPART_MAX_LOOP_DELAY_MS: '600',
    });
    app = runtime.app;
  });

  afterAll(async () => {
    await runtime?.stop();
  });

  it('refuses API requests with 503 and says so on /readyz while behind, and serves again after', async () => {
    const context = {
      ip: '81.2.69.160',
      headers: {
        'User-Agent':
          'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
      },
    };
    type Answers = {
      ready: { status: number; body: unknown };
      risk: { status: number; retryAfter: string | null };
    };
    const box: { answers: Answers | null } = { answers: null };
    const asked = (async () => {
      // Asked while the loop is hogged: answered between its long turns.
      await new Promise((r) => setTimeout(r, 600));
      const ready = await fetch(`${app.baseUrl}/readyz`);
      const risk = await call(app, 'POST', '/v1/risk', {
        event: '$login',
        status: '$succeeded',
        user: { id: 'lag-1' },
        context,
      });
      box.answers = {
        ready: { status: ready.status, body: await ready.json() },
        risk: { status: risk.status, retryAfter: risk.headers.get('retry-after') },
      };
    })();
    await hogTheLoop(450, () => box.answers !== null);
    await asked;
    const seen = box.answers as Answers;
    expect(seen.ready.status).toBe(503);
    expect(seen.ready.body).toEqual({
      status: 'unavailable',
      reason: expect.stringMatching(/^overloaded: the service ran \d+ ms behind in the last 2 s$/),
    });
    expect(seen.risk.status).toBe(503);
    expect(Number(seen.risk.retryAfter)).toBeGreaterThanOrEqual(1);
    await waitFor(async () => (await fetch(`${app.baseUrl}/readyz`)).status === 200, {
      what: '/readyz 200 once the loop runs freely',
      timeoutMs: 60_000,
    });
    expect(
      (
        await call(app, 'POST', '/v1/risk', {
          event: '$login',
          status: '$succeeded',
          user: { id: 'lag-1' },
          context,
        })
      ).status,
    ).toBe(201);
  });
});
