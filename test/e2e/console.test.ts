/**
 * The web console end to end in real headless Chromium (Debian's `chromium`, driven by
 * puppeteer-core; nothing is downloaded), against the running service with seeded data: sign-in
 * by keyboard, every page, a policy created and edited with a dry run before each publish and
 * rolled back, a device reported from the user page, the retention set on the settings page; an analyst key that cannot change anything
 * even by calling the API from the page; another environment whose data never appears; a phone
 * screen. The sandbox also holds 100,000 older events of 5,000 users, so that every page answers
 * at volume. The screenshots it takes are the ones docs/console.md shows (docs/console/*.png).
 */
import http from 'node:http';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { startTestApp, call, basic, type TestApp } from '../support/app';
import {
  consolePage,
  goTo as go,
  launchChromium,
  pageText as text,
  requireChromium,
  SCREENSHOTS,
  signIn,
  waitText,
  type Chromium,
} from '../support/chromium';
import { appendVolume } from '../support/volume';
import { serverKind } from '../../src/store/server-kind';
import type { EnvId } from '../../src/core/model';

/** Older events the sandbox holds besides the seeded ones. */
const VOLUME = Number(process.env.RAMPART_CONSOLE_VOLUME ?? 100_000);

// The screenshots docs/console.md shows are the ones this test takes: written there with
// RAMPART_UPDATE_SCREENSHOTS=1, else under .data/ (so that a test run leaves the tree clean).
const SHOTS = SCREENSHOTS;

let app: TestApp;
let chromium: Chromium;
let browser: Browser;
let analystKey: string;
let other: { secret: string; envId: string };
let hook: http.Server;
const pageErrors: string[] = [];

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
/** Where a wave of failed logins comes from (no other seeded event uses it). */
const WAVE_IP = '185.220.101.7';
const UA_PHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1';

/** A verdict over REST; `hoursAgo` dates the event in the past (the overview's chart spreads them out). */
async function risk(
  secret: string,
  userId: string,
  opts: { token?: string; ip?: string; event?: string; ua?: string; hoursAgo?: number } = {},
) {
  const r = await call({ baseUrl: app.baseUrl, secret }, 'POST', '/v1/risk', {
    event: opts.event ?? '$login',
    ...(opts.hoursAgo ? { timestamp: new Date(Date.now() - opts.hoursAgo * 3_600_000).toISOString() } : {}),
    user: { id: userId, email: `${userId}@example.com` },
    ...(opts.token ? { request_token: opts.token } : {}),
    context: {
      ip: opts.ip ?? '81.2.69.142',
      headers: { 'User-Agent': opts.ua ?? UA, Accept: 'text/html', 'Accept-Language': 'en-GB' },
    },
  });
  expect(r.status).toBe(201);
  return r.body as { device: { token: string }; policy: { action: string } };
}

/** A feedback or activity event over REST (/v1/track: no verdict). */
async function track(secret: string, body: Record<string, unknown>, ip = '81.2.69.142') {
  const r = await call({ baseUrl: app.baseUrl, secret }, 'POST', '/v1/track', {
    ...body,
    context: { ip, headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB' } },
  });
  expect(r.status).toBe(204);
}

async function gql(secret: string, query: string, variables: Record<string, unknown> = {}) {
  const res = await fetch(`${app.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: basic(secret) },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: any; errors?: unknown[] };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

beforeAll(async () => {
  requireChromium();
  mkdirSync(SHOTS, { recursive: true });
  app = await startTestApp({ grpc: false, webhooks: { pollMs: 100, backoffBaseMs: 50 } });
  hook = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  await gql(app.secret, 'mutation($u: String) { setWebhookUrl(url: $u) { id } }', {
    u: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`,
  });
  await app.built.services.environments.setPrivacyEmail(app.env.id, 'privacy@example.com');

  // The sandbox (A): ordinary logins, a user with two devices, and forced denials and challenges.
  const ips = ['81.2.69.142', '81.2.69.160', '8.8.8.8', '1.1.1.1', '9.9.9.9'];
  for (let i = 0; i < 10; i++)
    await risk(app.secret, `user-${i}`, { ip: ips[i % ips.length], hoursAgo: 20 - 2 * i });
  for (let i = 0; i < 10; i++)
    await risk(app.secret, `user-${i}`, { ip: ips[i % ips.length], hoursAgo: 19 - 2 * i });
  await risk(app.secret, 'ada', { token: 'fp-ada-laptop' });
  await risk(app.secret, 'ada', { token: 'fp-ada-phone', ua: UA_PHONE, ip: '81.2.69.160' });
  await risk(app.secret, 'ada', { token: 'fp-ada-laptop' });
  for (let i = 0; i < 4; i++)
    await risk(app.secret, `stuffed-${i}`, {
      token: 'test|device:chrome_on_mac|policy.action:deny|risk:0.95',
      ip: '8.8.8.8',
      hoursAgo: 6 + i * 0.2,
    });
  for (let i = 0; i < 3; i++)
    await risk(app.secret, `checked-${i}`, {
      token: 'test|device:chrome_on_mac|policy.action:challenge|risk:0.7',
      ip: '1.1.1.1',
      hoursAgo: 12 - i,
    });
  await risk(app.secret, 'new-signup', { event: '$registration' });
  // A wave of failed logins that name only the e-mail they tried (tracked, and one through filter).
  for (let i = 0; i < 3; i++)
    await track(app.secret, { event: '$login.failed', user: { email: `wave-${i}@example.com` } }, WAVE_IP);
  const filtered = await call({ baseUrl: app.baseUrl, secret: app.secret }, 'POST', '/v1/filter', {
    type: '$login',
    status: '$failed',
    params: { email: 'wave-3@example.com' },
    request_token: 'test|device:chrome_on_mac',
    context: { ip: WAVE_IP, headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB' } },
  });
  expect(filtered.status).toBe(201);
  // A user who answers a challenge, then logs out: feedback, then activity without a verdict.
  await risk(app.secret, 'leaver');
  await track(app.secret, { event: '$challenge.succeeded', user: { id: 'leaver' } });
  await track(app.secret, { event: '$logout', user: { id: 'leaver' } });
  await app.built.services.track.drain(false);
  await gql(app.secret, 'mutation { requestPrivacyExport(userId: "user-1") { id } }');
  analystKey = (await app.built.services.environments.addCredential(app.env.id, 'analyst', 'e2e analyst'))
    .secret;

  // Volume: the console works on a large environment (issue 31): 100,000 older events of 5,000
  // other users (25 hours to 7 days ago), written in bulk, their keys and rollups through the
  // store's own writers.
  await risk(app.secret, 'volume-busy', { ip: '81.2.69.160' });
  await appendVolume(app, app.env.id as EnvId, VOLUME, { busyUser: 'volume-busy' });

  // Another environment (B), whose users and addresses must never show in A's console.
  const b = await app.newEnvironment('tenant-b');
  other = { secret: b.secret, envId: b.env.id };
  await risk(b.secret, 'tenant-b-only-user', { ip: '203.0.113.77' });
  await risk(b.secret, 'tenant-b-only-user', { ip: '203.0.113.77', token: 'fp-b' });
  await app.built.state.flush();

  chromium = await launchChromium('rampart-console-');
  browser = chromium.browser;
  // Writing the volume takes most of this: tens of seconds on a quiet machine, several minutes on
  // one whose cores are shared many times over. The bound only catches a hang, not slowness.
}, 1_800_000);

afterAll(async () => {
  await chromium?.close();
  await new Promise((resolve) => hook?.close(resolve));
  await app?.close();
});

const shot = (page: Page, name: string) =>
  page.screenshot({
    path: path.join(SHOTS, `${name}.png`) as `${string}.png`,
    fullPage: name !== 'phone-menu',
  });
/** The text of each row's cell in `column` (1-based) of the page's data table. */
const cells = (page: Page, column: number) =>
  page.$$eval(`table.data tbody tr td:nth-child(${column})`, (tds) =>
    tds.map((td) => (td.textContent ?? '').trim()),
  );

describe('the console as an administrator (API secret)', () => {
  let page: Page;
  beforeAll(async () => {
    page = await consolePage(browser, pageErrors);
  });

  it('refuses a wrong key, then signs in by keyboard; the session is an HttpOnly cookie and nothing is kept in storage', async () => {
    await page.goto(`${app.baseUrl}/console`, { waitUntil: 'load' });
    await page.waitForSelector('input[name=key]');
    await shot(page, 'sign-in');
    await page.keyboard.type('sk_not_a_real_key_000000');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.state.error');
    // It says the key was not accepted and how to get one, not that something went wrong.
    const refused = await page.$eval('.state.error', (el) => el.textContent ?? '');
    expect(refused).toContain('Key not accepted');
    expect(refused).toContain('That API secret was not accepted');
    expect(refused).toContain('npx rampart secret add');
    expect(refused).not.toMatch(/something went wrong|missing or invalid/i);
    await page.$eval('input[name=key]', (el) => ((el as any).value = ''));
    await page.focus('input[name=key]');
    await page.keyboard.type(app.secret);
    await page.keyboard.press('Enter');
    await page.waitForSelector('[data-testid=environment]');
    const env = await page.$eval('[data-testid=environment]', (el) => (el as any).innerText);
    expect(env).toContain('sandbox');
    expect(env).toContain(app.env.id);
    expect(await page.$eval('[data-testid=credential-kind]', (el) => el.textContent)).toBe('admin');
    const storage = await page.evaluate(() => ({
      local: JSON.stringify((globalThis as any).localStorage),
      session: JSON.stringify((globalThis as any).sessionStorage),
      cookie: (globalThis as any).document.cookie,
    }));
    expect(storage).toEqual({ local: '{}', session: '{}', cookie: '' });
    const cookies = await page.browserContext().cookies();
    const c = cookies.find((x) => x.name === 'rampart_session');
    expect(c).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(
      JSON.stringify(await page.evaluate(() => (globalThis as any).document.documentElement.outerHTML)),
    ).not.toContain(app.secret);
  });

  it('shows the overview: verdict counts, the chart, top signals and where denials come from', async () => {
    await waitText(page, 'Verdicts over time');
    await page.waitForSelector('.chart canvas');
    await waitText(page, 'Denied: where from');
    await page.waitForFunction(
      () => (globalThis as any).document.querySelectorAll('#denied table.bars tr').length > 0,
    );
    expect(
      Number(await page.$eval('[data-testid=count-deny]', (el) => el.textContent?.replace(/,/g, ''))),
    ).toBeGreaterThanOrEqual(4);
    expect(
      Number(await page.$eval('[data-testid=count-challenge]', (el) => el.textContent?.replace(/,/g, ''))),
    ).toBeGreaterThanOrEqual(3);
    const denied = await page.$eval('#denied', (el) => (el as any).innerText);
    expect(denied).toContain('8.8.8.8');
    expect(await text(page)).not.toContain('203.0.113.77');
    await shot(page, 'overview');
  });

  it('explores events with filters, and opens one with its signals and policy revision', async () => {
    await go(page, '#/events');
    await page.waitForSelector('[data-testid=event-link]');
    expect(await text(page)).not.toContain('tenant-b-only-user');
    // A page holds 25 events; the next ones come with "Load more".
    expect(await page.$$eval('[data-testid=event-link]', (a) => a.length)).toBe(25);
    const more = await page.$$('button');
    for (const b of more) if ((await b.evaluate((el) => el.textContent)) === 'Load more') await b.click();
    await page.waitForFunction(
      () => (globalThis as any).document.querySelectorAll('[data-testid=event-link]').length > 25,
    );
    await page.type('input[name=ip]', '8.8.8.8');
    await page.select('select[name=action]', 'DENY');
    await page.click('form.filters button[type=submit]');
    await page.waitForFunction(
      () =>
        (globalThis as any).location.hash.includes('ip=8.8.8.8') &&
        (globalThis as any).location.hash.includes('action=DENY'),
    );
    await page.waitForFunction(() => {
      const rows = [...(globalThis as any).document.querySelectorAll('table.data tbody tr')].map(
        (tr) => (tr as any).innerText,
      );
      return (
        !(globalThis as any).document.querySelector('.state.loading') &&
        rows.length > 0 &&
        rows.every((r) => r.includes('8.8.8.8'))
      );
    });
    const rows = await page.$$eval('table.data tbody tr', (trs) => trs.map((tr) => (tr as any).innerText));
    expect(rows.length).toBeGreaterThanOrEqual(4);
    for (const r of rows) {
      expect(r).toContain('8.8.8.8');
      expect(r).toMatch(/deny/);
    }
    await shot(page, 'events');
    await page.click('[data-testid=event-link]');
    await page.waitForSelector('[data-testid=event-revision]');
    await waitText(page, 'Signals (');
    expect(await text(page)).toContain('Sandbox test token (deny)');
    // A forced verdict names the test policy, not the conditions of one of the environment's policies.
    expect(await text(page)).toContain('forced by a sandbox test token');
    expect(await page.$('[data-testid=event-conditions]')).toBeNull();
    expect(await page.$$eval('.signal-list li', (li) => li.length)).toBeGreaterThan(0);
    await shot(page, 'event');
    await go(page, '#/events?userId=ada');
    await page.waitForFunction(
      () =>
        (globalThis as any).document.querySelectorAll('[data-testid=event-link]').length === 3 &&
        !(globalThis as any).document.querySelector('.state.loading'),
    );
    await page.click('[data-testid=event-link]');
    await page.waitForSelector('[data-testid=event-revision]');
    const revision = await page.$eval('[data-testid=event-revision]', (el) => el.textContent);
    const stored = await gql(
      app.secret,
      '{ events(filter: { userId: "ada" }, first: 1) { edges { node { policy { revision } } } } }',
    );
    expect(revision).toBe(stored.events.edges[0].node.policy.revision);
    expect(await page.$eval('[data-testid=event-conditions]', (el) => el.textContent)).toBe(
      'allow when every event',
    );
  });

  it('names the accounts a wave of failed logins targets, by e-mail when the event has no user id', async () => {
    await go(page, '#/events?name=%24login.failed');
    await page.waitForFunction(() => {
      const d = (
        globalThis as unknown as {
          document: { querySelector(s: string): unknown; querySelectorAll(s: string): { length: number } };
        }
      ).document;
      return !d.querySelector('.state.loading') && d.querySelectorAll('table.data tbody tr').length === 4;
    });
    expect((await cells(page, 5)).sort()).toEqual([
      'wave-0@example.com',
      'wave-1@example.com',
      'wave-2@example.com',
      'wave-3@example.com',
    ]);
    // With a user id, the e-mail stands beside it.
    await go(page, '#/events?userId=user-1');
    await page.waitForFunction(() => {
      const d = (
        globalThis as unknown as {
          document: { querySelector(s: string): unknown; querySelectorAll(s: string): { length: number } };
        }
      ).document;
      return !d.querySelector('.state.loading') && d.querySelectorAll('table.data tbody tr').length === 2;
    });
    const users = await cells(page, 5);
    expect(users.map((u) => u.replace(/\s+/g, ' '))).toEqual([
      'user-1 user-1@example.com',
      'user-1 user-1@example.com',
    ]);
  });

  it('labels events without a verdict by what they are: a logout is no feedback', async () => {
    await go(page, '#/events?userId=leaver');
    await page.waitForFunction(() => {
      const d = (
        globalThis as unknown as {
          document: { querySelector(s: string): unknown; querySelectorAll(s: string): { length: number } };
        }
      ).document;
      return !d.querySelector('.state.loading') && d.querySelectorAll('table.data tbody tr').length === 3;
    });
    const names = await cells(page, 2);
    const verdicts = await cells(page, 3);
    const label = Object.fromEntries(names.map((n, i) => [n, verdicts[i]]));
    expect(label['$logout']).toBe('no verdict');
    expect(label['$challenge.succeeded']).toBe('feedback');
    expect(['allow', 'challenge', 'deny']).toContain(label['$login']);
    // The event's own page says the same.
    const links = await page.$$('[data-testid=event-link]');
    await links[names.indexOf('$logout')].click();
    await page.waitForSelector('.page-head h1 .badge');
    expect(await page.$eval('.page-head h1 .badge', (el) => el.textContent)).toBe('no verdict');
    expect(await text(page)).not.toMatch(/feedback/i);
    // And the user's summary counts both as without a verdict.
    await go(page, '#/users/leaver');
    await waitText(page, 'Verdicts');
    expect(await text(page)).toMatch(/no verdict 2/);
    expect(await text(page)).not.toMatch(/feedback \d/);
  });

  it("lists devices to review, shows a user's page and reports a device from it, after a confirmation", async () => {
    await go(page, '#/users');
    await page.waitForSelector('#reported-devices');
    expect(await page.$eval('#reported-devices', (el) => (el as any).innerText)).toContain(
      'No device has been reported',
    );
    await go(page, '#/users/ada');
    await page.waitForSelector('[data-testid=device-row]');
    expect(await page.$$eval('[data-testid=device-row]', (r) => r.length)).toBe(2);
    await waitText(page, 'Timeline');
    await shot(page, 'user');
    const rows = await page.$$('[data-testid=device-row]');
    const report = await rows[0].$('[data-testid=report]');
    await report!.click();
    await page.waitForSelector('dialog[open] [data-testid=confirm]');
    await page.click('dialog[open] [data-testid=confirm]');
    await page.waitForFunction(
      () =>
        !(globalThis as any).document.querySelector('dialog[open]') &&
        (globalThis as any).document.body.innerText.includes('reported'),
    );
    const devices = await gql(app.secret, '{ user(id: "ada") { devices { reviewState } } }');
    expect(devices.user.devices.map((d: { reviewState: string }) => d.reviewState).sort()).toEqual([
      'REPORTED',
      'UNREVIEWED',
    ]);
    await go(page, '#/users');
    await page.waitForSelector('#reported-devices [data-testid=review-row]');
    expect(await page.$eval('#reported-devices', (el) => (el as any).innerText)).toContain('ada');
    await shot(page, 'users');
    await go(page, '#/users/ada');
    await page.waitForSelector('[data-testid=device-row]');
    // The report sent $incident.confirmed: it shows among the webhooks about the user (refreshed until it is written).
    await page.waitForFunction(
      async () => {
        const t = (globalThis as any).document.querySelector('#user-webhooks')?.textContent ?? '';
        if (t.includes('$incident.confirmed')) return true;
        (globalThis as any).document.querySelector('[data-testid=refresh-user]')?.click();
        return false;
      },
      { polling: 500, timeout: 15_000 },
    );
  });

  it('creates a policy with a dry run before publishing, edits it the same way, and rolls it back', async () => {
    await go(page, '#/policies');
    await page.waitForSelector('[data-testid=policy-link]');
    await page.click('[data-testid=new-policy]');
    await page.waitForSelector('form.policy-form input[name=name]');
    // Publishing is offered only after a dry run of this very draft.
    expect(await page.$eval('[data-testid=publish]', (b) => (b as any).disabled)).toBe(true);
    await page.type('form.policy-form input[name=name]', 'Deny every login (e2e)');
    await page.select('form.policy-form select[name=group]', 'BEFORE');
    await page.select('form.policy-form select[name=action]', 'DENY');
    await page.type('form.policy-form input[name=events]', '$login');
    await page.select('form.policy-form select[name=days]', '1');
    // A draft the API refuses shows why, field by field, and cannot be published.
    await page.type('form.policy-form input[name=signalsAny]', 'no_such_signal');
    await page.click('[data-testid=dry-run]');
    await page.waitForSelector('.state.error');
    expect(await page.$eval('.state.error', (el) => (el as any).innerText)).toMatch(
      /conditions\.signalsAny.*unknown signal no_such_signal/s,
    );
    expect(await page.$eval('[data-testid=publish]', (b) => (b as any).disabled)).toBe(true);
    await page.$eval('form.policy-form input[name=signalsAny]', (el) => {
      (el as any).value = '';
      el.dispatchEvent(new Event('input', { bubbles: true }));
    });
    await page.click('[data-testid=dry-run]');
    await page.waitForSelector('[data-testid=dry-run-changed]');
    const changed = Number(
      (await page.$eval('[data-testid=dry-run-changed] strong', (el) => el.textContent))?.replace(/,/g, ''),
    );
    expect(changed).toBeGreaterThan(0);
    await shot(page, 'policy-dry-run');
    expect(await page.$eval('[data-testid=publish]', (b) => (b as any).disabled)).toBe(false);
    await page.click('[data-testid=publish]');
    await page.waitForFunction(() => /#\/policies\/[0-9a-f-]{36}$/.test((globalThis as any).location.hash));
    await page.waitForSelector('[data-testid=revision]');
    const id = (await page.evaluate(() => (globalThis as any).location.hash)).split('/').pop() as string;
    let p = (
      await gql(
        app.secret,
        `{ policy(id: "${id}") { name group action conditions { events } revisions { id } } }`,
      )
    ).policy;
    expect(p).toMatchObject({
      name: 'Deny every login (e2e)',
      group: 'BEFORE',
      action: 'DENY',
      conditions: { events: ['$login'] },
    });
    // The very next login is denied by it.
    expect((await risk(app.secret, 'after-publish')).policy.action).toBe('deny');

    // Edit: challenge instead; a changed draft needs a new dry run.
    await page.select('form.policy-form select[name=action]', 'CHALLENGE');
    expect(await page.$eval('[data-testid=publish]', (b) => (b as any).disabled)).toBe(true);
    await page.click('[data-testid=dry-run]');
    await page.waitForSelector('[data-testid=dry-run-changed]');
    await page.waitForFunction(
      () => !((globalThis as any).document.querySelector('[data-testid=publish]') as any).disabled,
    );
    await page.click('[data-testid=publish]');
    await page.waitForFunction(
      () => (globalThis as any).document.querySelectorAll('[data-testid=revision]').length === 2,
    );
    p = (await gql(app.secret, `{ policy(id: "${id}") { action revisions { id } } }`)).policy;
    expect(p.action).toBe('CHALLENGE');
    await waitText(page, 'action');
    await shot(page, 'policy-revisions');

    // Roll back to the first revision.
    await page.click('[data-testid=rollback]');
    await page.waitForSelector('dialog[open] [data-testid=confirm]');
    await page.click('dialog[open] [data-testid=confirm]');
    await page.waitForFunction(
      () => (globalThis as any).document.querySelectorAll('[data-testid=revision]').length === 3,
    );
    p = (await gql(app.secret, `{ policy(id: "${id}") { action revision revisions { id action } } }`)).policy;
    expect(p.action).toBe('DENY');
    expect(p.revisions.map((r: { action: string }) => r.action)).toEqual(['DENY', 'CHALLENGE', 'DENY']);
    expect((await risk(app.secret, 'after-rollback')).policy.action).toBe('deny');
    // Archive it again so that later verdicts are not all denied.
    await gql(app.secret, `mutation { archivePolicy(id: "${id}") { id } }`);
  });

  it('lists webhook deliveries with their attempts, and privacy jobs with their status', async () => {
    await go(page, '#/webhooks');
    await page.waitForSelector('[data-testid=delivery-row]');
    // Open a delivery that has been delivered (the newest may still be on its way).
    const rows = await page.$$('[data-testid=delivery-row]');
    const states = await page.$$eval('[data-testid=delivery-row]', (trs) =>
      trs.map((tr) => (tr as any).innerText),
    );
    const delivered = states.findIndex((t) => /\bdelivered\b/.test(t));
    expect(delivered).toBeGreaterThanOrEqual(0);
    await (await rows[delivered].$('button.link'))!.click();
    await waitText(page, 'Attempts');
    expect(await text(page)).toMatch(/HTTP 200/);
    await shot(page, 'webhooks');
    await go(page, '#/privacy');
    await page.waitForSelector('[data-testid=job-row]');
    expect(await page.$eval('[data-testid=job-row]', (el) => (el as any).innerText)).toContain('user-1');
    await shot(page, 'privacy');
  });

  it('sets the retention on the settings page: a value out of range is refused by the API, naming it', async () => {
    await go(page, '#/settings');
    await page.waitForSelector('input[name=retentionDays]');
    expect(await page.$eval('[data-testid=retention-days]', (el) => el.textContent)).toBe('90 days');
    // The browser's own check would stop 0 before it is sent: the API's answer is what is shown.
    await page.$eval('input[name=retentionDays]', (el) => (el as any).removeAttribute('min'));
    await page.click('input[name=retentionDays]', { count: 3 });
    await page.keyboard.type('0');
    await page.keyboard.press('Enter');
    await waitText(page, 'must be a whole number of days from 1 to 3650');
    expect(await text(page)).toContain('retentionDays');
    await page.click('input[name=retentionDays]', { count: 3 });
    await page.keyboard.type('30');
    await page.keyboard.press('Enter');
    await waitText(page, 'Raw records are now kept 30 days.');
    await waitText(page, '30 days');
    expect(await page.$eval('[data-testid=retention-days]', (el) => el.textContent)).toBe('30 days');
    await shot(page, 'settings');
    expect((await gql(app.secret, '{ environment { retentionDays } }')).environment.retentionDays).toBe(30);
  });

  it('answers at volume: the 7-day overview, a filter by signal and its next pages, a busy user', async () => {
    await go(page, '#/overview?range=7d');
    await waitText(page, 'Verdicts over time', 30_000);
    // The volume's verdicts are in the 7-day view (from the rollups).
    expect(
      Number(await page.$eval('[data-testid=count-challenge]', (el) => el.textContent?.replace(/,/g, ''))),
    ).toBeGreaterThan(1000);
    await go(page, '#/events?signal=proxy_ip');
    await page.waitForFunction(
      () =>
        (globalThis as any).document.querySelectorAll('[data-testid=event-link]').length === 25 &&
        !(globalThis as any).document.querySelector('.state.loading'),
      { timeout: 30_000 },
    );
    for (const b of await page.$$('button'))
      if ((await b.evaluate((el) => el.textContent)) === 'Load more') await b.click();
    await page.waitForFunction(
      () => (globalThis as any).document.querySelectorAll('[data-testid=event-link]').length === 50,
      { timeout: 30_000 },
    );
    // A user with thousands of events: the page answers, with the counts of the newest ones.
    await go(page, '#/users/volume-busy');
    await page.waitForSelector('[data-testid=event-link]', { timeout: 30_000 });
    if ((await serverKind(app.database.db)).indexPushdown)
      await waitText(page, '+ (counts of the newest)', 30_000);
  });

  it('signs out; the old cookie no longer opens anything', async () => {
    const cookie = (await page.browserContext().cookies()).find((c) => c.name === 'rampart_session')!.value;
    await page.click('[data-testid=sign-out]');
    await page.waitForSelector('input[name=key]');
    const res = await fetch(`${app.baseUrl}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        cookie: `rampart_session=${cookie}`,
        'x-rampart-csrf': 'x',
      },
      body: '{"query":"{ environment { id } }"}',
    });
    expect(res.status).toBe(401);
  });
});

describe('the console with an analyst key', () => {
  it('explains a key it does not accept by what it looks like, then signs in with an analyst key', async () => {
    const page = await consolePage(browser, pageErrors);
    await page.goto(`${app.baseUrl}/console`, { waitUntil: 'load' });
    await page.waitForSelector('input[name=key]');
    const typeKey = async (key: string) => {
      await page.$eval('input[name=key]', (el) => ((el as unknown as { value: string }).value = ''));
      await page.focus('input[name=key]');
      await page.keyboard.type(key);
    };
    /** Submit a key the service refuses; the error box it then shows. */
    const refusal = async (key: string) => {
      await typeKey(key);
      await Promise.all([
        page.waitForResponse((r) => r.url().endsWith('/console/session') && r.request().method() === 'POST'),
        page.keyboard.press('Enter'),
      ]);
      await page.waitForSelector('.state.error');
      return page.$eval('.state.error', (el) => el.textContent ?? '');
    };
    const analyst = await refusal(`ak_${'x'.repeat(32)}`);
    expect(analyst).toContain('Key not accepted');
    expect(analyst).toContain('That analyst key was not accepted');
    expect(analyst).toContain('npx rampart analyst-key add');
    expect(analyst).not.toContain('API secret was not accepted');
    const publishable = await refusal(app.env.publishableKey);
    expect(publishable).toContain('publishable key');
    expect(publishable).toContain('npx rampart analyst-key add');
    const other = await refusal('not a key at all');
    expect(other).toContain('That key was not accepted');
    expect(other).toContain('npx rampart analyst-key add');
    expect(other).toContain('npx rampart secret add');
    for (const t of [analyst, publishable, other])
      expect(t).not.toMatch(/something went wrong|missing or invalid API secret/i);
    // A live analyst key (as `npx rampart analyst-key add` prints it) signs in, read-only.
    await typeKey(analystKey);
    await page.keyboard.press('Enter');
    await page.waitForSelector('[data-testid=credential-kind]');
    expect(await page.$eval('[data-testid=credential-kind]', (el) => el.textContent)).toBe('read-only');
  });

  it('reads everything but offers no change, and the API refuses one forced from the page', async () => {
    const page = await consolePage(browser, pageErrors);
    await signIn(page, app.baseUrl, analystKey);
    expect(await page.$eval('[data-testid=credential-kind]', (el) => el.textContent)).toBe('read-only');
    await go(page, '#/users/user-2');
    await page.waitForSelector('[data-testid=device-row]');
    expect(await page.$eval('[data-testid=report]', (b) => (b as any).disabled)).toBe(true);
    expect(await page.$eval('[data-testid=purge]', (b) => (b as any).disabled)).toBe(true);
    expect(await text(page)).toContain('read-only');
    await go(page, '#/policies');
    await page.waitForSelector('[data-testid=policy-link]');
    expect(await page.$('[data-testid=new-policy]')).toBeNull();
    await page.click('[data-testid=policy-link]');
    await page.waitForSelector('[data-testid=dry-run]');
    expect(await page.$('[data-testid=publish]')).toBeNull();
    await shot(page, 'analyst-policy');
    // Straight to the API from the page, with the session's own CSRF token: still refused.
    const forced = await page.evaluate(async () => {
      const s = (await (await fetch('/console/session')).json()) as { csrfToken: string };
      const res = await fetch('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-rampart-csrf': s.csrfToken },
        body: JSON.stringify({ query: 'mutation { reportDevice(token: "any") { token } }' }),
      });
      return {
        status: res.status,
        body: (await res.json()) as { errors: { extensions: { code: string } }[] },
      };
    });
    expect(forced.status).toBe(403);
    expect(forced.body.errors[0].extensions.code).toBe('FORBIDDEN');
    // The settings page shows the retention without a form.
    await go(page, '#/settings');
    await page.waitForSelector('[data-testid=retention-days]');
    expect(await page.$('input[name=retentionDays]')).toBeNull();
    expect(await text(page)).toContain('read-only');
    const devices = await gql(app.secret, '{ user(id: "user-2") { devices { reviewState } } }');
    expect(devices.user.devices.map((d: { reviewState: string }) => d.reviewState)).toEqual(['UNREVIEWED']);
    // A session that ends (here: deleted) sends the page back to sign-in at its next request, saying why.
    await app.database.db.collection('console_sessions').deleteMany({});
    await go(page, '#/events');
    await page.waitForSelector('input[name=key]');
    expect(await text(page)).toMatch(/Signed out: not signed in/);
  });
});

describe('another environment', () => {
  it("shows only its own data, and none of the sandbox's", async () => {
    const page = await consolePage(browser, pageErrors);
    await signIn(page, app.baseUrl, other.secret);
    expect(await page.$eval('[data-testid=environment]', (el) => (el as any).innerText)).toContain(
      'tenant-b',
    );
    await go(page, '#/events');
    await page.waitForSelector('[data-testid=event-link]');
    const t = await text(page);
    expect(t).toContain('tenant-b-only-user');
    // As whole words: the environment's id (hex) may hold "ada" by chance.
    for (const a of ['ada', 'user-1', 'stuffed-0', '8.8.8.8'])
      expect(t).not.toMatch(new RegExp(`(^|[^\\w.-])${a.replace(/[.-]/g, '\\$&')}($|[^\\w.-])`));
    await go(page, '#/users/ada');
    await waitText(page, 'never seen user ada');
    await go(page, '#/overview');
    await waitText(page, 'Verdicts over time');
    expect(await text(page)).not.toContain('8.8.8.8');
    await go(page, '#/webhooks');
    await waitText(page, 'No webhook');
  });

  it('says once, when an export is requested, that the environment has no privacy address', async () => {
    const page = await consolePage(browser, pageErrors);
    await signIn(page, app.baseUrl, other.secret);
    await go(page, '#/users/tenant-b-only-user');
    await page.waitForSelector('[data-testid=export]');
    await page.click('[data-testid=export]');
    await page.waitForSelector('dialog[open] [data-testid=confirm]');
    await page.click('dialog[open] [data-testid=confirm]');
    await page.waitForSelector('dialog[open] .state.error');
    const box = await page.$eval('dialog[open] .state.error', (el) => el.textContent ?? '');
    expect(box.split('has no privacy e-mail address').length - 1).toBe(1);
    expect(box).toContain('npx rampart env set-privacy-email');
    expect(box).not.toMatch(/something went wrong/i);
  });
});

describe('the page', () => {
  it('has a favicon, of the right type, that its content security policy lets it load', async () => {
    const page = await consolePage(browser, pageErrors);
    await page.goto(`${app.baseUrl}/console`, { waitUntil: 'load' });
    const icon = await page.$eval('link[rel~=icon]', (el) => ({
      href: (el as unknown as { href: string }).href,
      type: el.getAttribute('type'),
    }));
    expect(icon.type).toBe('image/svg+xml');
    const res = await fetch(icon.href);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect((await res.text()).trimStart()).toMatch(/^<svg /);
    // Loaded as an image by the page itself, under its CSP.
    const decoded = await page.evaluate(async (href) => {
      const image = new (
        globalThis as unknown as {
          Image: new () => { src: string; naturalWidth: number; decode(): Promise<void> };
        }
      ).Image();
      image.src = href;
      try {
        await image.decode();
        return image.naturalWidth > 0;
      } catch {
        return false;
      }
    }, icon.href);
    expect(decoded).toBe(true);
  });
});

describe('on a phone', () => {
  it('fits a 390 px screen, with the navigation behind a menu button', async () => {
    const page = await consolePage(browser, pageErrors, 390, 844);
    await signIn(page, app.baseUrl, app.secret);
    await waitText(page, 'Verdicts over time');
    await page.waitForSelector('.chart canvas');
    const overflow = await page.evaluate(
      () => (globalThis as any).document.documentElement.scrollWidth - (globalThis as any).innerWidth,
    );
    expect(overflow).toBeLessThanOrEqual(0);
    expect(await page.$eval('nav#nav', (el) => (globalThis as any).getComputedStyle(el).display)).toBe(
      'none',
    );
    await shot(page, 'phone-overview');
    await page.click('.menu-toggle');
    await page.waitForFunction(
      () =>
        (globalThis as any).getComputedStyle((globalThis as any).document.getElementById('nav') as any)
          .display !== 'none',
    );
    await shot(page, 'phone-menu');
    await page.click('nav a[href="#/events"]');
    await page.waitForSelector('[data-testid=event-link]');
    expect(
      await page.evaluate(
        () => (globalThis as any).document.documentElement.scrollWidth - (globalThis as any).innerWidth,
      ),
    ).toBeLessThanOrEqual(0);
  });

  it('raised no error in any page', () => {
    expect(pageErrors).toEqual([]);
  });
});
