/**
 * The table of real browsers' headers (test/fixtures/real-browsers.ts) over REST `/v1/risk` on a
 * real database: each row's verdict brings none of the user-agent and client-hints signals, and
 * the device Rampart records names its browser, OS and kind as the row says. Client hints no real
 * browser sends are still called a spoofed device.
 */
import { startTestApp, call, type TestApp } from '../support/app';
import { CONTRADICTIONS, REAL_BROWSERS, USER_AGENT_SIGNALS, type HeaderSet } from '../fixtures/real-browsers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  await app?.close();
});

interface RiskAnswer {
  signals: Record<string, Record<string, unknown>>;
  device: { token: string };
}
interface DeviceAnswer {
  context: { type: string; user_agent: { raw: string; browser: string; platform: string } };
}

let n = 0;
async function login(headers: HeaderSet): Promise<RiskAnswer> {
  const user = `real-browser-${++n}`;
  const r = await call(app, 'POST', '/v1/risk', {
    event: '$login',
    status: '$succeeded',
    user: { id: user, email: `${user}@example.com` },
    context: { ip: '81.2.69.142', headers },
  });
  expect(r.status).toBe(201);
  return r.body as RiskAnswer;
}
const userAgentSignals = (a: RiskAnswer) =>
  Object.fromEntries(
    Object.entries(a.signals).filter(([name]) => (USER_AGENT_SIGNALS as readonly string[]).includes(name)),
  );

it.each(REAL_BROWSERS)(
  '$name: no user-agent or client-hints signal; the device is $parsed.browser on $parsed.platform',
  async ({ headers, parsed }) => {
    const answer = await login(headers);
    expect(userAgentSignals(answer)).toEqual({});
    const device = await call(app, 'GET', `/v1/devices/${answer.device.token}`);
    expect(device.status).toBe(200);
    const { context } = device.body as DeviceAnswer;
    expect(context.type).toBe(parsed.type);
    expect(context.user_agent).toMatchObject({
      raw: headers['User-Agent'],
      browser: parsed.browser,
      platform: parsed.platform,
    });
  },
);

it.each(CONTRADICTIONS.filter((c) => c.signal === 'spoofed_device'))(
  '$name: a spoofed device',
  async ({ headers, detail }) => {
    const answer = await login(headers);
    expect(userAgentSignals(answer)).toEqual({ spoofed_device: expect.objectContaining(detail) });
  },
);
