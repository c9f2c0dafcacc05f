/**
 * Castle's front-end names in real headless Chromium: an application's pages written for Castle's
 * web client (the snippet's `_castle` queue, `_castle('getClientId')`, the `__cid` cookie, a
 * `castle_client_id` field) load Rampart's script instead (`rampart.js?pk_…`: the only change),
 * and the application's backend, unchanged, forwards what it always forwarded (the cookie or the
 * field as `context.client_id`, the header among the headers) to Rampart, which verifies it.
 *
 * The application is a loopback server of its own (another origin than Rampart's): its pages, and
 * a backend that posts to /v1/authenticate what Castle's Node SDK posts.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'puppeteer-core';
import { startTestApp, call, type TestApp } from '../support/app';
import { launchChromium, requireChromium, type Chromium } from '../support/chromium';

let rampart: TestApp;
let shop: Server;
let shopUrl: string;
let chromium: Chromium;
let browser: Browser;

interface Verdict {
  action: string;
  device_token: string | null;
  signals: Record<string, Record<string, unknown>>;
  /** What the backend received: the field's and the cookie's first characters. */
  received: { field: string | null; cookie: string | null; header: string | null };
}

beforeAll(async () => {
  requireChromium();
  rampart = await startTestApp({ grpc: false });
  shop = createServer((req, res) => {
    handle(req).then(
      ([type, body]) => res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' }).end(body),
      (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(err.stack),
    );
  });
  await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
  shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
  chromium = await launchChromium();
  browser = chromium.browser;
});
afterAll(async () => {
  await chromium?.close();
  await new Promise((resolve) => shop?.close(resolve));
  await rampart?.close();
});

/** The shop's pages (`/login?mode=…`) and its backend (`POST /login?via=…`, `POST /api/login`). */
async function handle(req: IncomingMessage): Promise<[string, string]> {
  const url = new URL(req.url ?? '/', shopUrl);
  if (req.method === 'GET' && url.pathname === '/login')
    return ['text/html; charset=utf-8', loginPage(url.searchParams.get('mode') ?? 'cookie')];
  let body = '';
  for await (const chunk of req) body += String(chunk);
  const form = new URLSearchParams(body);
  const cookies = Object.fromEntries(
    (req.headers.cookie ?? '')
      .split(/;\s*/)
      .filter(Boolean)
      .map((c) => [c.slice(0, c.indexOf('=')), c.slice(c.indexOf('=') + 1)]),
  );
  const field = form.get('castle_client_id');
  const cookie = cookies.__cid ?? null;
  const header =
    typeof req.headers['x-castle-client-id'] === 'string' ? req.headers['x-castle-client-id'] : null;
  // What Castle's Node SDK sends for `context: { ip, client_id, headers: req.headers }`: the
  // Cookie header scrubbed to true, client_id false when there was none.
  const headers: Record<string, string | true> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (typeof v === 'string') headers[k] = k === 'cookie' ? true : v;
  const via = url.searchParams.get('via');
  const clientId = via === 'field' ? field : via === 'cookie' ? cookie : null;
  const user = form.get('email') ?? 'nobody@example.com';
  const r = await call(rampart, 'POST', '/v1/authenticate', {
    event: '$login.succeeded',
    user_id: user,
    user_traits: { email: user },
    context: {
      ip: '81.2.69.142',
      client_id: clientId || false,
      headers,
      library: { name: 'castle-node', version: '0.4.7' },
    },
  });
  const verdict = {
    ...(r.body as object),
    received: {
      field: field?.slice(0, 5) ?? null,
      cookie: cookie?.slice(0, 5) ?? null,
      header: header?.slice(0, 5) ?? null,
    },
  };
  if (url.pathname === '/api/login') return ['application/json', JSON.stringify(verdict)];
  return [
    'text/html; charset=utf-8',
    `<!doctype html><pre id="verdict">${JSON.stringify(verdict).replace(/</g, '\\u003c')}</pre>`,
  ];
}

/**
 * A login page as written for Castle's web client, with Rampart's script tag in place of Castle's.
 * `field`: the submit handler Castle's docs show (getClientId into a `castle_client_id` field);
 * `cookie`: no script of its own (the backend reads `__cid`); `queued`: the same, the key given
 * through the snippet's queue rather than in the script's address; `spa`: a page that logs in
 * with fetch, the client id in an `X-Castle-Client-Id` header.
 */
function loginPage(mode: string): string {
  const own: Record<string, string> = {
    field: `document.getElementById('login').addEventListener('submit', function (evt) {
      evt.preventDefault();
      var clientId = _castle('getClientId');
      var hidden = document.createElement('input');
      hidden.setAttribute('type', 'hidden');
      hidden.setAttribute('name', 'castle_client_id');
      hidden.setAttribute('value', clientId);
      this.appendChild(hidden);
      this.submit();
    });`,
    cookie: '',
    spa: `window.logIn = function (email) {
      return fetch('/api/login', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-castle-client-id': _castle('getClientId') }, body: 'email=' + encodeURIComponent(email) }).then(function (r) { return r.json(); });
    };`,
  };
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Shop: log in</title>
<script>
  // Castle's snippet: calls made before the script loaded wait in _castle.q.
  window._castle = window._castle || function () { (window._castle.q = window._castle.q || []).push(arguments); };
  _castle(${mode === 'queued' ? `'setPublishableKey', '${rampart.env.publishableKey}'` : "'setAppId', '839473265432'"});
  _castle('trackPageview');
</script>
<script async src="${rampart.baseUrl}/client/v1/rampart.js${mode === 'queued' ? '' : `?${rampart.env.publishableKey}`}"></script>
</head><body>
<form id="login" method="post" action="/login?via=${mode === 'field' ? 'field' : 'cookie'}">
<input name="email" type="email" value="ada@example.com"><input name="password" type="password" value="correct horse">
<button type="submit">Log in</button>
</form>
<script>${own[mode] ?? ''}</script>
</body></html>`;
}

async function formLogin(mode: 'field' | 'cookie' | 'queued', email: string): Promise<Verdict> {
  const page = await browser.newPage();
  try {
    await page.goto(`${shopUrl}/login?mode=${mode}`, { waitUntil: 'load' });
    await page.$eval('input[name=email]', (el, v) => ((el as unknown as { value: string }).value = v), email);
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[type=submit]')]);
    return JSON.parse(await page.$eval('#verdict', (el) => el.textContent ?? '')) as Verdict;
  } finally {
    await page.close();
  }
}

/** Evaluated in the page: its `__cid` cookie holds a Rampart token. */
const HAS_TOKEN_COOKIE = '/(^|; )__cid=rpt1\\./.test(document.cookie)';

/** The token the page's `__cid` cookie holds now. */
async function cidCookie(
  page: Page,
): Promise<{ value: string; expires: number; session: boolean } | undefined> {
  return (await page.cookies(shopUrl)).find((c) => c.name === '__cid');
}

/**
 * A verdict whose token verified: no token problem, and the driven browser's own evidence
 * (navigator.webdriver), which only a token's claims carry, read from it.
 */
function expectVerified(v: Verdict): void {
  expect(v.signals).not.toHaveProperty('invalid_token');
  expect(v.signals).not.toHaveProperty('replayed_token');
  expect(v.signals.bot_behavior).toMatchObject({ reason: 'browser_automation' });
  expect(v.device_token).toEqual(expect.any(String));
}

describe("a page written for Castle's web client, with Rampart's script tag", () => {
  it("_castle('getClientId') in the page's submit handler fills castle_client_id with a token the backend gets verified", async () => {
    const v = await formLogin('field', 'ada@example.com');
    expect(v.received.field).toBe('rpt1.');
    expectVerified(v);
  });

  it('a form with no script of its own: the __cid cookie carries the token, and names the same device', async () => {
    const byField = await formLogin('field', 'grace@example.com');
    const byCookie = await formLogin('cookie', 'grace@example.com');
    expect(byCookie.received.cookie).toBe('rpt1.');
    // The script filled the form's castle_client_id too (a form with a password field).
    expect(byCookie.received.field).toBe('rpt1.');
    expectVerified(byCookie);
    expect(byCookie.device_token).toBe(byField.device_token);
  });

  it("the key queued through Castle's snippet (`_castle('setPublishableKey', 'pk_…')`) before the script loaded", async () => {
    const byCookie = await formLogin('cookie', 'queue@example.com');
    const queued = await formLogin('queued', 'queue@example.com');
    expect(queued.received.cookie).toBe('rpt1.');
    expectVerified(queued);
    expect(queued.device_token).toBe(byCookie.device_token);
  });

  it('without the token the backend names another device (the control)', async () => {
    const byCookie = await formLogin('cookie', 'linus@example.com');
    const page = await browser.newPage();
    try {
      await page.goto(`${shopUrl}/login?mode=cookie`, { waitUntil: 'load' });
      const bare = (await page.evaluate(() =>
        fetch('/api/login', {
          method: 'POST',
          credentials: 'omit',
          body: 'email=linus%40example.com',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }).then((r) => r.json()),
      )) as Verdict;
      expect(bare.received).toEqual({ field: null, cookie: null, header: null });
      expect(bare.device_token).not.toBe(byCookie.device_token);
      expect(bare.signals.bot_behavior?.reason).not.toBe('browser_automation');
    } finally {
      await page.close();
    }
  });

  it('replaces an old Castle __cid, and the cookie lives no longer than its token', async () => {
    const page = await browser.newPage();
    try {
      await page.setCookie({
        name: '__cid',
        value: '5f2c7a90-1b7e-4c1e-9a51-4f0d2c9e8b11',
        url: shopUrl,
        expires: Math.floor(Date.now() / 1000) + 34_560_000,
      });
      await page.goto(`${shopUrl}/login?mode=cookie`, { waitUntil: 'load' });
      await page.waitForFunction(HAS_TOKEN_COOKIE);
      const cid = await cidCookie(page);
      expect(cid?.value).toMatch(/^rpt1\./);
      expect(cid?.session).toBe(false);
      expect((cid?.expires ?? Infinity) * 1000).toBeLessThanOrEqual(Date.now() + 300_000);
    } finally {
      await page.close();
    }
  });

  it('an SPA: each login attempt takes a fresh token (in X-Castle-Client-Id), so none is a replay', async () => {
    const page = await browser.newPage();
    try {
      // The tests before left a token's cookie in this browser: wait for this page's own.
      await page.deleteCookie({ name: '__cid', url: shopUrl });
      await page.goto(`${shopUrl}/login?mode=spa`, { waitUntil: 'load' });
      await page.waitForFunction(HAS_TOKEN_COOKIE);
      const seen = new Set<string>();
      for (let i = 0; i < 4; i++) {
        const before = (await cidCookie(page))?.value ?? '';
        const v = (await page.evaluate(
          (email) => (globalThis as unknown as { logIn(e: string): Promise<unknown> }).logIn(email),
          'spa@example.com',
        )) as Verdict;
        expect(v.received.header).toBe('rpt1.');
        expectVerified(v);
        seen.add(before);
        // The token handed out is replaced: the next attempt waits for its own.
        await page.waitForFunction(
          (old) => {
            const cookie = (globalThis as unknown as { document: { cookie: string } }).document.cookie;
            return !cookie.includes(`__cid=${old}`) && /(^|; )__cid=rpt1\./.test(cookie);
          },
          {},
          before,
        );
      }
      expect(seen.size).toBe(4);
    } finally {
      await page.close();
    }
  });
});
