/**
 * Pages written for castle-js 2.x (npm `@castleio/castle-js`), as its documentation shows them, in
 * real headless Chromium, with only the script's source (or the import) and the key changed:
 *
 *  - `script`: the browser build in a script tag, `Castle.configure({ pk })`, a login form with
 *    `onsubmit="Castle.injectTokenOnSubmit(event)"`, and `Castle.page({ user })`;
 *  - `bundle`: an application's code that does `import * as Castle from '<package>'`, bundled by
 *    esbuild against @rampart/browser installed from its packed tarball as docs/client.md says:
 *    `Castle.configure({ pk })`, `await Castle.createRequestToken()` sent with a fetch login,
 *    `Castle.custom(…)`; and with `autoInjectTokenOnRequest` a fetch login that carries no token
 *    of its own.
 *
 * The shop is a loopback server of its own (another origin than Rampart's) whose backend forwards
 * the token with Castle's Node SDK (`@castleio/sdk`, `authenticate` with `context.client_id`, or
 * the request's headers), and gets the verdict with the device. Headless Chromium driven by a
 * test is what it is: its token says so (`bot_behavior`, `browser_automation`, which only a
 * verified token's claims carry), and the verdict weighs it. The bundled page calls its own
 * origin (no `apiUrl`): the shop proxies /v1/client/ to Rampart, as a first-party setup does.
 */
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { startTestApp, call, type TestApp } from '../support/app';
import { launchChromium, requireChromium, type Chromium } from '../support/chromium';

// Castle's Node SDK, as an application's backend uses it (CommonJS, no types of its own).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Castle: CastleServer } = require('@castleio/sdk') as {
  Castle: new (o: Record<string, unknown>) => {
    authenticate(p: Record<string, unknown>): Promise<Record<string, unknown>>;
  };
};

const ROOT = path.resolve(__dirname, '..', '..');
const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;
const TARBALL = path.join(ROOT, 'dist', `rampart-browser-${VERSION}.tgz`);
/** The address every login of these tests comes from (a token used from a second address is a replay). */
const IP = '81.2.69.142';

let rampart: TestApp;
let shop: Server;
let shopUrl: string;
let chromium: Chromium;
let browser: Browser;
let work: string;
let bundle: string;
let castle: InstanceType<typeof CastleServer>;

interface Verdict {
  action: string;
  device_token?: string | null;
  failover?: boolean;
  signals?: Record<string, Record<string, unknown>>;
  /** What the backend received of the token. */
  received: string | null;
}

/** The application's code, as castle-js's README writes it; only the import's source is Rampart's. */
const APP_SOURCE = `
import * as Castle from '@rampart/browser'; // was: '@castleio/castle-js'

Castle.configure({ pk: window.PK, autoInjectTokenOnRequest: window.AUTO_INJECT });

window.logIn = async (email, password) => {
  const requestToken = await Castle.createRequestToken();
  const res = await fetch('/api/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password, castle_request_token: requestToken }) });
  return res.json();
};
window.logInWithoutToken = async (email, password) => {
  const res = await fetch('/api/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
  return res.json();
};
window.addToCart = (user) => Castle.custom({ user, name: 'Added to cart', properties: { sku: 'A-1' } });
`;

beforeAll(async () => {
  requireChromium();
  if (!existsSync(TARBALL)) throw new Error(`${TARBALL} is missing: npm run build`);
  // The package installed as docs/client.md says (the packed tarball), and the application bundled against it.
  work = mkdtempSync(path.join(tmpdir(), 'rampart-castle-js-'));
  writeFileSync(
    path.join(work, 'package.json'),
    JSON.stringify({ name: 'shop', version: '1.0.0', private: true }),
  );
  execFileSync(
    'npm',
    ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', TARBALL],
    { cwd: work, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  writeFileSync(path.join(work, 'app.js'), APP_SOURCE);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const esbuild = require('esbuild') as typeof import('esbuild');
  bundle =
    esbuild.buildSync({
      entryPoints: [path.join(work, 'app.js')],
      absWorkingDir: work,
      bundle: true,
      format: 'iife',
      target: 'es2019',
      write: false,
      logLevel: 'warning',
    }).outputFiles[0]?.text ?? '';

  rampart = await startTestApp({ grpc: false });
  castle = new CastleServer({
    apiSecret: rampart.secret,
    apiUrl: rampart.baseUrl,
    timeout: 30_000,
    failoverStrategy: 'none',
    logLevel: 'silent',
  });
  shop = createServer((req, res) => {
    handle(req).then(
      ([status, type, body]) =>
        res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(body),
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
  if (work) rmSync(work, { recursive: true, force: true });
});

async function readBody(req: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of req) body += String(chunk);
  return body;
}

/** The shop: its pages, its bundle, its backend, and the first-party path to Rampart's collector. */
async function handle(req: IncomingMessage): Promise<[number, string, string]> {
  const url = new URL(req.url ?? '/', shopUrl);
  const html = 'text/html; charset=utf-8';
  if (req.method === 'GET' && url.pathname === '/script')
    return [200, html, scriptPage(url.searchParams.get('user') ?? 'nobody')];
  if (req.method === 'GET' && url.pathname === '/profile')
    return [
      200,
      html,
      profilePage(url.searchParams.get('user') ?? 'nobody', url.searchParams.get('jwt') ?? ''),
    ];
  if (req.method === 'GET' && url.pathname === '/bundle')
    return [200, html, bundlePage(url.searchParams.get('auto') === '1')];
  if (req.method === 'GET' && url.pathname === '/app.js') return [200, 'text/javascript', bundle];
  const body = await readBody(req);
  if (url.pathname.startsWith('/v1/client/')) {
    // A first-party proxy: the page's own origin forwards the collector's calls to Rampart.
    const res = await fetch(`${rampart.baseUrl}${url.pathname}`, {
      method: req.method,
      headers: {
        'content-type': req.headers['content-type'] ?? 'text/plain',
        origin: req.headers.origin ?? shopUrl,
      },
      body: req.method === 'POST' ? body : undefined,
    });
    return [res.status, 'application/json', await res.text()];
  }
  // The backend: Castle's Node SDK, as its README shows (`context.client_id`, the request's headers).
  const form =
    url.pathname === '/api/login'
      ? (JSON.parse(body || '{}') as Record<string, string>)
      : Object.fromEntries(new URLSearchParams(body));
  const token = form.castle_request_token ?? null;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
  const email = form.email ?? 'nobody@example.com';
  const verdict = await castle.authenticate({
    event: '$login.succeeded',
    user_id: email,
    user_traits: { email },
    context: { ip: IP, client_id: token ?? false, headers },
  });
  const answer = {
    ...verdict,
    received:
      token?.slice(0, 5) ??
      (headers['x-castle-request-token']?.slice(0, 5)
        ? `header:${headers['x-castle-request-token'].slice(0, 5)}`
        : null),
  };
  if (url.pathname === '/api/login') return [200, 'application/json', JSON.stringify(answer)];
  return [
    200,
    html,
    `<!doctype html><pre id="verdict">${JSON.stringify(answer).replace(/</g, '\\u003c')}</pre>`,
  ];
}

/** castle-js 2.x's browser build in a script tag, as its documentation shows; the source and the key are Rampart's. */
function scriptPage(user: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Shop: log in</title>
<script src="${rampart.baseUrl}/client/v1/rampart.js"></script>
<script>Castle.configure({ pk: '${rampart.env.publishableKey}' });</script>
</head><body>
<form id="login" action="/login" method="post" onsubmit="Castle.injectTokenOnSubmit(event)">
<input name="email" type="email" value="${user}"><input name="password" type="password" value="correct horse">
<button type="submit">Log in</button>
</form>
<script>
  Castle.page({ user: { id: '${user}', email: '${user}' } }).then(function (result) { window.pageResult = result; });
</script>
</body></html>`;
}

/**
 * castle-js's other helpers on one page: `autoInjectTokenOnSubmit` (a login form with no handler
 * of its own), `formEventOnSubmit` (a profile form whose marked fields are reported, a token
 * injected), and a signed user for later events (`userJwt`).
 */
function profilePage(user: string, jwt: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Shop: profile</title>
<script src="${rampart.baseUrl}/client/v1/rampart.js"></script>
<script>Castle.configure({ pk: '${rampart.env.publishableKey}', autoInjectTokenOnSubmit: true }); Castle.userJwt('${jwt}');</script>
</head><body>
<form id="login" action="/login" method="post">
<input name="email" type="email" value="${user}"><input name="password" type="password" value="correct horse">
<button id="log-in" type="submit">Log in</button>
</form>
<form id="profile" action="/login" method="post" data-castle-name="Change profile" onsubmit="Castle.formEventOnSubmit(event, { id: '${user}' }, { injectToken: true })">
<input name="email" type="email" value="${user}" data-castle-value="email"><input name="password" type="password" value="secret" data-castle-value="password">
<button id="save" type="submit">Save</button>
</form>
<script>Castle.page().then(function (result) { window.pageResult = result; });</script>
</body></html>`;
}

function bundlePage(auto: boolean): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Shop</title>
<script>window.PK = '${rampart.env.publishableKey}'; window.AUTO_INJECT = ${auto};</script>
<script src="/app.js"></script>
</head><body><p>Shop</p></body></html>`;
}

async function clientEvents(userId: string) {
  await rampart.built.state.flush();
  return rampart.database.db.collection('client_events').find({ envId: rampart.env.id, userId }).toArray();
}

/** A verdict on a token that verified: the device it names, the automation it carried, no token problem. */
function expectVerifiedToken(v: Verdict): void {
  expect(v.failover ?? false).toBe(false);
  expect(['allow', 'challenge', 'deny']).toContain(v.action);
  expect(typeof v.device_token).toBe('string');
  expect(v.signals).not.toHaveProperty('invalid_token');
  expect(v.signals).not.toHaveProperty('replayed_token');
  expect(v.signals?.bot_behavior).toMatchObject({ reason: 'browser_automation' });
}

async function devices(userId: string): Promise<{ token: string }[]> {
  const r = await call(rampart, 'GET', `/v1/users/${encodeURIComponent(userId)}/devices`);
  expect(r.status).toBe(200);
  return r.body.data as { token: string }[];
}

describe("a page written for castle-js 2.x's script tag", () => {
  it('logs in with the token Castle.injectTokenOnSubmit put in the form: the verdict names the device; Castle.page reached Rampart', async () => {
    const user = 'script-user@example.com';
    const page: Page = await browser.newPage();
    const messages: string[] = [];
    page.on('console', (m) => messages.push(m.text()));
    try {
      await page.goto(`${shopUrl}/script?user=${encodeURIComponent(user)}`, { waitUntil: 'load' });
      await page.waitForFunction('window.pageResult !== undefined', { timeout: 60_000 });
      expect(await page.evaluate('window.pageResult')).toBe(true);
      expect(await page.evaluate('typeof window.Rampart.configure === typeof window.Castle.configure')).toBe(
        true,
      );
      await Promise.all([
        page.waitForNavigation({ waitUntil: 'load', timeout: 60_000 }),
        page.click('button[type=submit]'),
      ]);
      const verdict = JSON.parse(await page.$eval('#verdict', (el) => el.textContent ?? '')) as Verdict;
      expect(verdict.received).toBe('rpt1.');
      expectVerifiedToken(verdict);
      expect((await devices(user)).map((d) => d.token)).toContain(verdict.device_token);
      const events = await clientEvents(user);
      expect(events.map((e) => [e.type, e.platform, e.appId])).toEqual([['page', 'web', shopUrl]]);
      expect(events[0]?.url).toBe(`${shopUrl}/script`);
      expect(messages.filter((m) => /Rampart:/.test(m))).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('warns on the console about an option it does not know, and works on', async () => {
    const page = await browser.newPage();
    const warnings: string[] = [];
    page.on(
      'console',
      (m) => m.type() === 'warn' && m.text().startsWith('Rampart:') && warnings.push(m.text()),
    );
    try {
      await page.goto(`${shopUrl}/script?user=warned`, { waitUntil: 'load' });
      await page.evaluate(`Castle.configure({ pk: '${rampart.env.publishableKey}', sendDebugData: true })`);
      expect(warnings).toEqual([expect.stringContaining('unknown option "sendDebugData"')]);
      expect(await page.evaluate('Castle.createRequestToken()')).toMatch(/^rpt1\./);
    } finally {
      await page.close();
    }
  });
});

describe("castle-js's other helpers in a page", () => {
  it('autoInjectTokenOnSubmit fills a plain login form; formEventOnSubmit reports the marked fields (never a password) and injects a token; userJwt signs later events', async () => {
    const user = 'profile-user@example.com';
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const signed = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ id: user, email: user })}`;
    const jwt = `${signed}.${createHmac('sha256', rampart.secret).update(signed).digest('base64url')}`;
    const page = await browser.newPage();
    try {
      await page.goto(`${shopUrl}/profile?user=${encodeURIComponent(user)}&jwt=${jwt}`, {
        waitUntil: 'load',
      });
      await page.waitForFunction('window.pageResult !== undefined', { timeout: 60_000 });
      expect(await page.evaluate('window.pageResult')).toBe(true);
      await Promise.all([
        page.waitForNavigation({ waitUntil: 'load', timeout: 60_000 }),
        page.click('#log-in'),
      ]);
      const login = JSON.parse(await page.$eval('#verdict', (el) => el.textContent ?? '')) as Verdict;
      expect(login.received).toBe('rpt1.');
      expectVerifiedToken(login);

      await page.goto(`${shopUrl}/profile?user=${encodeURIComponent(user)}&jwt=${jwt}`, {
        waitUntil: 'load',
      });
      await Promise.all([
        page.waitForNavigation({ waitUntil: 'load', timeout: 60_000 }),
        page.click('#save'),
      ]);
      const saved = JSON.parse(await page.$eval('#verdict', (el) => el.textContent ?? '')) as Verdict;
      expect(saved.received).toBe('rpt1.');
      const events = await clientEvents(user);
      const form = events.find((e) => e.type === 'form');
      expect(form).toMatchObject({ name: 'Change profile', properties: { email: user }, verified: false });
      expect(form?.properties).not.toHaveProperty('password');
      // The page views named no user of their own: the JWT set once signs them.
      expect(events.filter((e) => e.type === 'page').map((e) => e.verified)).toEqual([true, true]);
    } finally {
      await page.close();
    }
  });
});

describe('an application bundled against @rampart/browser, installed from its tarball', () => {
  it('logs in with the token Castle.createRequestToken made: the verdict names the device; Castle.custom reached Rampart', async () => {
    const user = 'bundle-user@example.com';
    const page = await browser.newPage();
    try {
      await page.goto(`${shopUrl}/bundle`, { waitUntil: 'load' });
      const verdict = (await page.evaluate(
        (email) =>
          (globalThis as unknown as { logIn(e: string, p: string): Promise<Verdict> }).logIn(
            email,
            'correct horse',
          ),
        user,
      )) as Verdict;
      expect(verdict.received).toBe('rpt1.');
      expectVerifiedToken(verdict);
      expect((await devices(user)).map((d) => d.token)).toContain(verdict.device_token);
      expect(
        await page.evaluate(
          (id) =>
            (globalThis as unknown as { addToCart(u: { id: string }): Promise<boolean | null> }).addToCart({
              id,
            }),
          user,
        ),
      ).toBe(true);
      expect((await clientEvents(user)).map((e) => [e.type, e.name, e.properties])).toEqual([
        ['custom', 'Added to cart', { sku: 'A-1' }],
      ]);
    } finally {
      await page.close();
    }
  });

  it("type-checks an application written against castle-js's types with the package's", () => {
    writeFileSync(
      path.join(work, 'typed.ts'),
      `import * as Castle from '@rampart/browser';
const client = Castle.configure({ pk: 'pk_abcdefgh12345678', apiUrl: 'https://rampart.example', timeout: 1000, autoInjectTokenOnRequest: true });
export const token: Promise<string> = client.createRequestToken();
export const paged: Promise<boolean | null> = Castle.page({ user: { id: '42', email: 'a@example.com', traits: { plan: 'pro' } }, name: 'Home' });
export const formed: Promise<boolean | null> = Castle.form({ userJwt: 'a.b.c', name: 'Sign up', values: { email: 'a@example.com' } });
export const custom: Promise<boolean | null> = Castle.custom({ user: { id: '42' }, name: 'Added to cart', properties: { sku: 'A-1' } });
export const submit = (evt: Event): void => Castle.injectTokenOnSubmit(evt);
export const formSubmit = (evt: Event): void => Castle.formEventOnSubmit(evt, { id: '42' }, { injectToken: true });
// @ts-expect-error: a page event's user needs an id
Castle.page({ user: { email: 'a@example.com' } });
`,
    );
    writeFileSync(
      path.join(work, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'ES2020',
          module: 'ESNext',
          moduleResolution: 'bundler',
          lib: ['ES2020', 'DOM'],
          types: [],
          skipLibCheck: false,
        },
        files: ['typed.ts'],
      }),
    );
    execFileSync(
      process.execPath,
      [require.resolve('typescript/bin/tsc'), '-p', path.join(work, 'tsconfig.json')],
      { cwd: work, stdio: ['ignore', 'inherit', 'inherit'] },
    );
  });

  it('with autoInjectTokenOnRequest, a fetch login carries a token in X-Castle-Request-Token, which the backend forwards among the headers', async () => {
    const user = 'header-user@example.com';
    const page = await browser.newPage();
    try {
      await page.goto(`${shopUrl}/bundle?auto=1`, { waitUntil: 'load' });
      const verdict = (await page.evaluate(
        (email) =>
          (
            globalThis as unknown as { logInWithoutToken(e: string, p: string): Promise<Verdict> }
          ).logInWithoutToken(email, 'correct horse'),
        user,
      )) as Verdict;
      expect(verdict.received).toBe('header:rpt1.');
      expectVerifiedToken(verdict);
      expect((await devices(user)).map((d) => d.token)).toContain(verdict.device_token);
    } finally {
      await page.close();
    }
  });
});
