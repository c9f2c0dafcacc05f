/**
 * The browser client end to end in real headless Chromium (Debian's `chromium`; nothing is
 * downloaded): the demo page loads /client/v1/rampart.js, the script collects the device's
 * components and gets a token when the form is submitted, Rampart (playing the application's
 * backend) forwards it to a verdict. One profile is one device; another profile another; the
 * headless, driven browser is flagged; a replayed or altered token is caught; the page proves
 * work with the script's own SHA-256 and reports what happened on it; the headers it sends (its
 * client hints) are a row of the real-browser table, which no user-agent rule calls spoofed.
 */
import type { Browser } from 'puppeteer-core';
import { startTestApp, call, type TestApp } from '../support/app';
import { storedOf } from '../support/stored';
import { launchChromium, requireChromium, type Chromium } from '../support/chromium';
import { USER_AGENT_SIGNALS } from '../fixtures/real-browsers';
import { DEFAULT_POW_BITS } from '../../src/core/client/proof';

let app: TestApp;
const launched: Chromium[] = [];
beforeAll(async () => {
  requireChromium();
  app = await startTestApp({ grpc: false });
});
afterAll(async () => {
  for (const c of launched) await c.close();
  await app?.close();
});

/** A headless Chromium with its own profile directory (a browser profile of its own). */
async function browser(): Promise<Browser> {
  const c = await launchChromium();
  launched.push(c);
  return c.browser;
}

interface DemoVerdict {
  action: string;
  risk: number;
  device_token: string | null;
  signals: Record<string, Record<string, unknown>>;
  token_received: boolean;
}

/** Log in on the demo page as `email`; the verdict Rampart shows. */
async function demoLogin(b: Browser, email: string): Promise<DemoVerdict> {
  const page = await b.newPage();
  try {
    await page.goto(`${app.baseUrl}/client/demo`, { waitUntil: 'load' });
    await page.$eval('#email', (el, v) => ((el as unknown as { value: string }).value = v), email);
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[type=submit]')]);
    return JSON.parse(await page.$eval('#verdict', (el) => el.textContent ?? '')) as DemoVerdict;
  } finally {
    await page.close();
  }
}

const context = { ip: '81.2.69.142', headers: { 'User-Agent': 'x', Accept: 'text/html' } };

describe('the browser client in Chromium', () => {
  let first: Browser;
  beforeAll(async () => {
    first = await browser();
  });

  it('creates a token in the page, and the verdict reads the device from it', async () => {
    const v = await demoLogin(first, 'ada@example.com');
    expect(v.token_received).toBe(true);
    expect(v.device_token).toEqual(expect.any(String));
    expect(v.signals).not.toHaveProperty('invalid_token');
    expect(v.signals).not.toHaveProperty('replayed_token');
  });

  it('flags the headless, driven browser itself as automation', async () => {
    const v = await demoLogin(first, 'bot-check@example.com');
    expect(Object.keys(v.signals)).toEqual(expect.arrayContaining(['bot_behavior']));
    expect(v.signals.bot_behavior).toMatchObject({ reason: 'browser_automation' });
    expect(v.signals).toHaveProperty('headless_browser');
    expect(v.action).toBe('deny');
  });

  it('the headers this Chromium sent bring no client-hints signal (a row of the real-browser table)', async () => {
    const email = 'client-hints@example.com';
    const v = await demoLogin(first, email);
    await app.built.state.flush();
    const [event] = await storedOf(app).eventsOfUser(app.env.id, email, 10);
    const sent = Object.fromEntries(
      Object.entries(event?.context.headers ?? {}).filter(
        (h): h is [string, string] => typeof h[1] === 'string',
      ),
    );
    // Chromium on Linux, on a secure origin (loopback is one): its user agent and its low-entropy client hints.
    expect(sent['user-agent']).toMatch(
      /^Mozilla\/5\.0 \(X11; Linux x86_64\) AppleWebKit\/537\.36 \(KHTML, like Gecko\) HeadlessChrome\/\d+/,
    );
    expect(sent).toMatchObject({
      'sec-ch-ua': expect.stringMatching(/"Chromium";v="\d+"/),
      'sec-ch-ua-mobile': '?0',
      'sec-ch-ua-platform': '"Linux"',
      'sec-fetch-mode': 'navigate',
    });
    // Its own verdict: driven and headless (the user agent and the token say so), but not a spoofed device.
    expect(v.signals).toHaveProperty('headless_browser');
    expect(v.signals).not.toHaveProperty('spoofed_device');
    // The same request from a person's Chromium (no "Headless" in its name), over REST: none of the rules fires.
    const person = Object.fromEntries(
      Object.entries(sent).map(([name, value]) => [name, value.replace(/HeadlessChrome/g, 'Chrome')]),
    );
    const r = await call(app, 'POST', '/v1/risk', {
      event: '$login',
      user: { id: 'chromium-person' },
      context: { ip: context.ip, headers: person },
    });
    expect(r.status).toBe(201);
    const signals = r.body.signals as Record<string, unknown>;
    expect(
      Object.keys(signals).filter((name) => (USER_AGENT_SIGNALS as readonly string[]).includes(name)),
    ).toEqual([]);
    const device = await call(
      app,
      'GET',
      `/v1/devices/${(r.body as { device: { token: string } }).device.token}`,
    );
    expect(device.body).toMatchObject({
      context: { type: 'desktop', user_agent: { browser: 'Chrome', platform: 'Linux' } },
    });
  });

  it('the same browser twice is the same device; another profile is another device', async () => {
    const a = await demoLogin(first, 'grace@example.com');
    const again = await demoLogin(first, 'grace@example.com');
    const other = await demoLogin(await browser(), 'grace@example.com');
    expect(again.device_token).toBe(a.device_token);
    expect(other.device_token).not.toBe(a.device_token);
  });

  it('a token taken from the page and replayed, or altered, is caught', async () => {
    const page = await first.newPage();
    await page.goto(`${app.baseUrl}/client/demo`, { waitUntil: 'load' });
    // Runs in the page, where the classic script defined Rampart on the global object.
    const token = await page.evaluate(() =>
      (
        globalThis as unknown as { Rampart: { createRequestToken(): Promise<string> } }
      ).Rampart.createRequestToken(),
    );
    await page.close();
    expect(token).toMatch(/^rpt1\./);
    const risk = (t: string, ip = context.ip) =>
      call(app, 'POST', '/v1/risk', {
        event: '$login',
        user: { id: 'replay-victim' },
        request_token: t,
        context: { ...context, ip },
      });
    expect((await risk(token)).body.signals).not.toHaveProperty('replayed_token');
    const elsewhere = await risk(token, '203.0.113.50');
    expect(elsewhere.body.signals).toHaveProperty('replayed_token');
    expect(elsewhere.body.policy.action).toBe('deny');
    const [prefix, claims, mac] = token.split('.') as [string, string, string];
    const altered = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as Record<string, unknown>;
    const tampered = await risk(
      `${prefix}.${Buffer.from(JSON.stringify({ ...altered, auto: [] })).toString('base64url')}.${mac}`,
    );
    expect(tampered.body.signals).toMatchObject({ invalid_token: { reason: 'forged' } });
  });

  it('proves work in the page and reports what happened on it (counts, how the password was entered)', async () => {
    const page = await first.newPage();
    try {
      await page.goto(`${app.baseUrl}/client/demo`, { waitUntil: 'load' });
      await page.click('#password', { count: 3 });
      await page.type('#password', 'hunter2');
      const token = await page.evaluate(() =>
        (
          globalThis as unknown as { Rampart: { createRequestToken(): Promise<string> } }
        ).Rampart.createRequestToken(),
      );
      const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
        pw?: number;
        pc?: string;
        bh?: Record<string, unknown>;
      };
      // The collector checked the proof with node:crypto: the script's own SHA-256 agrees with it.
      expect(claims.pw).toBe(DEFAULT_POW_BITS);
      expect(claims.pc).toEqual(expect.any(String));
      expect(claims.bh).toMatchObject({ k: 7, pw: 'typed', v: 0 });
      expect(claims.bh?.p).toBeGreaterThanOrEqual(1);
      expect(claims.bh).not.toHaveProperty('a');
      const verdict = await call(app, 'POST', '/v1/risk', {
        event: '$login',
        user: { id: 'proved-page' },
        request_token: token,
        context,
      });
      expect(verdict.body.signals).not.toHaveProperty('unproven_client');
      expect(verdict.body.signals).not.toHaveProperty('invalid_token');
    } finally {
      await page.close();
    }
  });

  it('serves the script as a classic script and as an ES module', async () => {
    for (const file of ['rampart.js', 'rampart.mjs']) {
      const res = await fetch(`${app.baseUrl}/client/v1/${file}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/javascript/);
      expect(await res.text()).toContain('createRequestToken');
    }
    expect((await fetch(`${app.baseUrl}/client/v1/../../package.json`)).status).toBe(404);
  });
});
