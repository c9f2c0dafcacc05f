/**
 * Lists in the web console, end to end in real headless Chromium (Debian's `chromium`, driven by
 * puppeteer-core) against the running service: an administrator creates a block list on the
 * Lists page and a policy denying what is in it (with "in list" in the policy form and a dry run),
 * opens an event and adds its IP to the list with "add to list", and the next login from that
 * address over REST is denied with the `in_list` signal naming the list (issue 35's done-when);
 * the list's page shows the item and its history, and archiving it there lets the address in
 * again; an e-mail goes from a user's page into a new list made in the same form. An analyst sees
 * lists, items and history without any control that changes them.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { startTestApp, call, basic, type TestApp } from '../support/app';
import {
  consolePage,
  goTo as go,
  launchChromium,
  pageText as text,
  requireChromium,
  SCREENSHOTS as SHOTS,
  signIn,
  waitText,
  type Chromium,
} from '../support/chromium';

const UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
/** The address of the attack: seen once before anything is listed. */
const BAD_IP = '198.51.100.23';
const LIST_NAME = 'Card-testing addresses';
const POLICY_NAME = 'Deny listed addresses';

let app: TestApp;
let chromium: Chromium;
let browser: Browser;
let analystKey: string;
const pageErrors: string[] = [];

async function login(userId: string, ip: string) {
  const r = await call(app, 'POST', '/v1/risk', {
    event: '$login',
    user: { id: userId, email: `${userId}@example.com` },
    context: { ip, headers: { 'User-Agent': UA, Accept: 'text/html', 'Accept-Language': 'en-GB' } },
  });
  expect(r.status).toBe(201);
  return r.body as {
    policy: { action: string; name: string };
    signals: Record<string, Record<string, unknown>>;
  };
}

async function gql(query: string, variables: Record<string, unknown> = {}) {
  const res = await fetch(`${app.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: basic(app.secret) },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: any; errors?: unknown[] };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

beforeAll(async () => {
  requireChromium();
  mkdirSync(SHOTS, { recursive: true });
  app = await startTestApp({ grpc: false });
  expect((await login('carder', BAD_IP)).policy.action).not.toBe('deny');
  await login('regular', '81.2.69.142');
  await app.built.state.flush();
  analystKey = (await app.built.services.environments.addCredential(app.env.id, 'analyst', 'lists analyst'))
    .secret;
  chromium = await launchChromium('rampart-console-lists-');
  browser = chromium.browser;
}, 120_000);

afterAll(async () => {
  await chromium?.close();
  await app?.close();
});

const shot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(SHOTS, `${name}.png`) as `${string}.png`, fullPage: true });

describe('lists in the console, as an administrator', () => {
  let page: Page;
  let listId: string;
  beforeAll(async () => {
    page = await consolePage(browser, pageErrors);
    await signIn(page, app.baseUrl, app.secret);
  });

  it('creates a block list on the Lists page', async () => {
    await go(page, '#/lists');
    await waitText(page, 'No lists yet');
    await page.type('#new-list input[name=name]', LIST_NAME);
    await page.select('#new-list select[name=type]', 'IP');
    await page.type('#new-list input[name=description]', 'addresses seen testing stolen cards');
    await page.click('[data-testid=create-list]');
    await page.waitForFunction(() => /#\/lists\/[0-9a-f-]{36}$/.test((globalThis as any).location.hash));
    listId = (await page.evaluate(() => (globalThis as any).location.hash as string))
      .split('/')
      .pop() as string;
    await waitText(page, 'No items yet');
    const lists = (await gql('{ lists { id name type description } }')).lists;
    expect(lists).toEqual([
      { id: listId, name: LIST_NAME, type: 'IP', description: 'addresses seen testing stolen cards' },
    ]);
  });

  it('makes a policy that denies what is in the list, with "in list" in the policy form', async () => {
    await go(page, '#/policies/new');
    await page.waitForSelector('form.policy-form input[name=name]');
    await page.waitForSelector(`form.policy-form input[name="inList-${listId}"]`);
    await page.type('form.policy-form input[name=name]', POLICY_NAME);
    await page.select('form.policy-form select[name=group]', 'BEFORE');
    await page.select('form.policy-form select[name=action]', 'DENY');
    await page.click(`form.policy-form input[name="inList-${listId}"]`);
    await page.select('form.policy-form select[name=days]', '1');
    await page.click('[data-testid=dry-run]');
    await page.waitForSelector('[data-testid=dry-run-changed]');
    await page.waitForFunction(
      () => !((globalThis as any).document.querySelector('[data-testid=publish]') as any).disabled,
    );
    await page.click('[data-testid=publish]');
    await page.waitForFunction(() => /#\/policies\/[0-9a-f-]{36}$/.test((globalThis as any).location.hash));
    await waitText(page, `in list {${LIST_NAME}}`);
    const policies = (await gql('{ policies { name action group conditions { inLists notInLists } } }'))
      .policies;
    expect(policies.find((p: { name: string }) => p.name === POLICY_NAME)).toEqual({
      name: POLICY_NAME,
      action: 'DENY',
      group: 'BEFORE',
      conditions: { inLists: [listId], notInLists: null },
    });
    // Nothing is listed yet: the address still gets in.
    expect((await login('carder', BAD_IP)).policy.action).not.toBe('deny');
  });

  it('adds the IP of an event to the block list from the event page; the next login from it is denied with in_list', async () => {
    await go(page, `#/events?ip=${BAD_IP}`);
    await page.waitForSelector('[data-testid=event-link]');
    await page.click('[data-testid=event-link]');
    await page.waitForSelector('[data-testid=event-ip] [data-testid=add-to-list-ip]');
    await page.click('[data-testid=event-ip] [data-testid=add-to-list-ip]');
    await page.waitForSelector('dialog[open] select[name=list]');
    await page.waitForFunction(
      (id) =>
        ((globalThis as any).document.querySelector('dialog[open] select[name=list]') as any).value === id,
      {},
      listId,
    );
    await page.type('dialog[open] input[name=reason]', 'card testing, incident 42');
    await shot(page, 'add-to-list');
    await page.click('dialog[open] [data-testid=add-to-list-submit]');
    await page.waitForSelector('[data-testid=event-ip] [data-testid=added-to-list]');
    expect(
      await page.$eval('[data-testid=event-ip] [data-testid=added-to-list]', (el) => el.textContent),
    ).toContain(LIST_NAME);

    const denied = await login('carder', BAD_IP);
    expect(denied.policy).toMatchObject({ action: 'deny', name: POLICY_NAME });
    expect(denied.signals.in_list).toMatchObject({
      list_id: listId,
      list_name: LIST_NAME,
      value: BAD_IP,
      field: 'ip',
    });
    expect((await login('regular', '81.2.69.142')).policy.action).not.toBe('deny');

    // The console's events show the denial, and its page names the list.
    await app.built.state.flush();
    await go(page, `#/events?ip=${BAD_IP}&action=DENY`);
    await page.waitForFunction(
      () =>
        !(globalThis as any).document.querySelector('.state.loading') &&
        (globalThis as any).document.querySelectorAll('[data-testid=event-link]').length === 1,
    );
    expect(await page.$eval('table.data tbody tr', (tr) => (tr as any).innerText)).toMatch(/deny/);
    await page.click('[data-testid=event-link]');
    await page.waitForSelector('[data-testid=in-list-link]');
    expect(await page.$eval('[data-testid=in-list-link]', (el) => el.textContent)).toContain(LIST_NAME);
    expect(await text(page)).toContain(POLICY_NAME);
  });

  it("shows the list's item, the policy using it and its history; archiving the item lets the address in again", async () => {
    await page.click('[data-testid=in-list-link]');
    await page.waitForSelector('[data-testid=item-row]');
    const row = await page.$eval('[data-testid=item-row]', (tr) => (tr as any).innerText as string);
    expect(row).toContain(BAD_IP);
    expect(row).toContain('card testing, incident 42');
    expect(row).toContain('active');
    expect(await text(page)).toContain(POLICY_NAME);
    const history = await page.$$eval('[data-testid=audit-row]', (trs) =>
      trs.map((tr) => (tr as any).innerText as string),
    );
    expect(history[0]).toContain('list_item.create');
    expect(history[history.length - 1]).toContain('list.create');
    // In use by a policy, the list cannot be deleted.
    expect(await page.$eval('[data-testid=delete-list]', (b) => (b as any).disabled)).toBe(true);
    await shot(page, 'list');

    await page.click('[data-testid=item-row] [data-testid=archive]');
    await page.waitForSelector('dialog[open] [data-testid=confirm]');
    await page.click('dialog[open] [data-testid=confirm]');
    await waitText(page, 'No items yet');
    expect((await login('carder', BAD_IP)).policy.action).not.toBe('deny');
    await page.select('#items select[name=state]', 'archived');
    await page.waitForSelector('[data-testid=item-row] [data-testid=unarchive]');
    await page.click('[data-testid=item-row] [data-testid=unarchive]');
    await page.waitForSelector('dialog[open] [data-testid=confirm]');
    await page.click('dialog[open] [data-testid=confirm]');
    await waitText(page, 'No archived items');
    expect((await login('carder', BAD_IP)).policy.action).toBe('deny');

    // Added on the list's page, with an expiry; a value the API refuses says why.
    await page.type('#add-item input[name=itemValue]', '300.1.1.1');
    await page.click('[data-testid=add-item]');
    await page.waitForSelector('#add-item .state.error');
    expect(await page.$eval('#add-item .state.error', (el) => (el as any).innerText)).toMatch(/value/);
    await page.$eval('#add-item input[name=itemValue]', (el) => {
      (el as any).value = '';
      el.dispatchEvent(new Event('input', { bubbles: true }));
    });
    await page.type('#add-item input[name=itemValue]', '203.0.113.0/24');
    await page.type('#add-item input[name=itemReason]', 'botnet range');
    await page.$eval('#add-item input[name=itemExpires]', (el) => {
      (el as any).value = '2099-01-01T12:00';
      el.dispatchEvent(new Event('input', { bubbles: true }));
    });
    await page.click('[data-testid=add-item]');
    await page.select('#items select[name=state]', 'active');
    await page.waitForFunction(
      () => (globalThis as any).document.querySelectorAll('[data-testid=item-row]').length === 2,
    );
    const items = (
      await gql(
        `query($id: ID!) { list(id: $id) { items { edges { node { value comment expiresAt } } } } }`,
        { id: listId },
      )
    ).list.items.edges.map((e: any) => e.node);
    expect(items.find((i: { value: string }) => i.value === '203.0.113.0/24')).toEqual({
      value: '203.0.113.0/24',
      comment: 'botnet range',
      expiresAt: '2099-01-01T12:00:00.000Z',
    });
  });

  it("adds a user's e-mail to a new list made in the same form", async () => {
    await go(page, '#/users/carder');
    await page.waitForSelector('[data-testid=add-to-list-email]');
    await page.click('[data-testid=add-to-list-email]');
    await page.waitForSelector('dialog[open] select[name=list]');
    // No e-mail list exists: the form offers a new one.
    await page.waitForSelector('dialog[open] input[name=newListName]');
    await page.type('dialog[open] input[name=newListName]', 'Fraud ring e-mails');
    await page.type('dialog[open] input[name=reason]', 'same ring');
    await page.click('dialog[open] [data-testid=add-to-list-submit]');
    await page.waitForSelector('[data-testid=added-to-list]');
    const lists = (await gql('{ lists { name type items { edges { node { value comment } } } } }')).lists;
    expect(lists.find((l: { name: string }) => l.name === 'Fraud ring e-mails')).toEqual({
      name: 'Fraud ring e-mails',
      type: 'EMAIL',
      items: { edges: [{ node: { value: 'carder@example.com', comment: 'same ring' } }] },
    });
    await go(page, '#/lists');
    await page.waitForFunction(
      () => (globalThis as any).document.querySelectorAll('[data-testid=list-row]').length === 2,
    );
    await shot(page, 'lists');
  });
});

describe('lists in the console, as an analyst', () => {
  it('reads lists, items and history, with no control that changes them', async () => {
    const page = await consolePage(browser, pageErrors);
    await signIn(page, app.baseUrl, analystKey);
    await go(page, '#/lists');
    await page.waitForSelector('[data-testid=list-link]');
    expect(await page.$('[data-testid=create-list]')).toBeNull();
    expect(await text(page)).toContain('read-only');
    const lists = await page.$$eval('[data-testid=list-link]', (as) => as.map((a) => a.textContent));
    expect(lists).toContain(LIST_NAME);
    const listId = (await gql('{ lists { id name } }')).lists.find(
      (l: { name: string }) => l.name === LIST_NAME,
    ).id as string;
    await go(page, `#/lists/${listId}`);
    await page.waitForSelector('[data-testid=item-row]');
    await page.waitForSelector('[data-testid=audit-row]');
    expect(await page.$('[data-testid=archive]')).toBeNull();
    expect(await page.$('[data-testid=add-item]')).toBeNull();
    expect(await page.$('[data-testid=delete-list]')).toBeNull();
    // No "add to list" beside the values of an event.
    await go(page, `#/events?ip=${BAD_IP}`);
    await page.waitForSelector('[data-testid=event-link]');
    await page.click('[data-testid=event-link]');
    await page.waitForSelector('[data-testid=event-ip]');
    expect(await page.$('[data-testid^=add-to-list]')).toBeNull();
    // The API refuses a change forced from the page.
    const forced = await page.evaluate(async (id) => {
      const s = (await (await fetch('/console/session')).json()) as { csrfToken: string };
      const r = await fetch('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-rampart-csrf': s.csrfToken },
        body: JSON.stringify({
          query: `mutation { addListItem(listId: "${id}", input: { value: "192.0.2.1" }) { id } }`,
        }),
      });
      return { status: r.status, body: (await r.json()) as { errors: { extensions: { code: string } }[] } };
    }, listId);
    expect(forced.status).toBe(403);
    expect(forced.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('raised no error in any page', () => {
    expect(pageErrors).toEqual([]);
  });
});
