/**
 * The console's event page in real headless Chromium (Debian's `chromium`, as the other browser
 * tests find it): an event with a long user agent is shown whole, in its summary and in its
 * Headers box; nothing on the page runs past its box or the window; the page's main region, which
 * takes focus on each page change, draws no focus ring under the content. The screenshot is kept
 * as a test artefact outside the repository (RAMPART_TEST_ARTEFACTS, else the system's temporary
 * directory), not compared: the assertions read the rendered layout.
 */
import { mkdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from 'puppeteer-core';
import { startTestApp, call, basic, type TestApp } from '../support/app';
import { consolePage, goTo, launchChromium, signIn, waitText, type Chromium } from '../support/chromium';

const ARTEFACTS = path.join(
  process.env.RAMPART_TEST_ARTEFACTS ?? path.join(tmpdir(), 'rampart-test-artefacts'),
  'console',
);
/** A real, long user agent (an in-app browser's): longer than the Headers box is wide. */
const LONG_UA =
  'Mozilla/5.0 (Linux; Android 14; SM-S918B Build/UP1A.231005.007; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.230 Mobile Safari/537.36 [FB_IAB/FB4A;FBAV/446.0.0.38.109;FBBV/553455677;FBDM/{density=2.625,width=1080,height=2340};FBLC/en_GB;FBRV/0;]';

let app: TestApp;
let chromium: Chromium;
let eventId: string;
const errors: string[] = [];

beforeAll(async () => {
  app = await startTestApp({ grpc: false });
  const r = await call({ baseUrl: app.baseUrl, secret: app.secret }, 'POST', '/v1/risk', {
    event: '$login',
    user: { id: 'long-ua', email: 'long-ua@example.com' },
    context: {
      ip: '81.2.69.142',
      headers: { 'User-Agent': LONG_UA, Accept: 'text/html', 'Accept-Language': 'en-GB' },
    },
  });
  expect(r.status).toBe(201);
  await app.built.state.flush();
  const res = await fetch(`${app.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: basic(app.secret) },
    body: JSON.stringify({
      query: '{ events(first: 1, filter: { userId: "long-ua" }) { edges { node { id } } } }',
    }),
  });
  const body = (await res.json()) as { data: { events: { edges: { node: { id: string } }[] } } };
  eventId = body.data.events.edges[0]?.node.id as string;
  expect(eventId).toBeTruthy();
  chromium = await launchChromium('rampart-event-page-');
  mkdirSync(ARTEFACTS, { recursive: true });
}, 600_000);

afterAll(async () => {
  await chromium?.close();
  await app?.close();
});

/** The page's layout as the assertions read it. */
async function layout(page: Page) {
  return page.evaluate((ua) => {
    const doc = (globalThis as any).document;
    const win = globalThis as any;
    const cards = [...doc.querySelectorAll('section.card')] as any[];
    const headers = cards.find((c) => c.querySelector('h2')?.textContent === 'Headers');
    const pre = headers?.querySelector('pre');
    // A scroll container that hides part of what it holds across (a cut-off value), or an
    // element that reaches past the window.
    const overflowing: string[] = [];
    for (const el of doc.querySelectorAll('main *') as any[]) {
      const r = el.getBoundingClientRect();
      if (r.width === 0) continue;
      const name = `${el.tagName.toLowerCase()}${el.className ? `.${String(el.className).replace(/ /g, '.')}` : ''}`;
      if (r.right > doc.documentElement.clientWidth + 1) overflowing.push(`${name} reaches past the window`);
      const style = win.getComputedStyle(el);
      if (/auto|hidden|scroll/.test(style.overflowX) && el.scrollWidth > el.clientWidth + 1)
        overflowing.push(`${name} hides ${el.scrollWidth - el.clientWidth}px across`);
    }
    const main = doc.getElementById('main');
    const mainStyle = win.getComputedStyle(main);
    return {
      headersText: pre?.innerText ?? null,
      overflowing,
      pageScrollsAcross: doc.documentElement.scrollWidth > doc.documentElement.clientWidth,
      mainFocused: doc.activeElement === main,
      mainOutline:
        mainStyle.outlineStyle === 'none' || mainStyle.outlineWidth === '0px'
          ? 'none'
          : `${mainStyle.outlineStyle} ${mainStyle.outlineColor}`,
      summaryShowsUa: doc.body.innerText.includes(ua),
    };
  }, LONG_UA);
}

it.each([
  ['a desktop window', 1366, 900],
  ['a narrow window', 800, 900],
])(
  'shows an event with a long user agent whole, nothing cut off or overflowing, in %s',
  async (_, width, height) => {
    const page = await consolePage(chromium.browser, errors, width, height);
    page.setDefaultTimeout(120_000);
    await signIn(page, app.baseUrl, app.secret);
    await goTo(page, `#/events/${eventId}`);
    await waitText(page, 'Headers', 120_000);
    const shot = path.join(ARTEFACTS, `event-page-${width}.png`);
    await page.screenshot({ path: shot as `${string}.png`, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(0);
    const l = await layout(page);
    // The Headers box holds the whole user agent, on as many lines as it takes.
    expect(l.headersText).toContain(LONG_UA.replace(/"/g, '\\"'));
    expect(l.summaryShowsUa).toBe(true);
    expect(l.overflowing).toEqual([]);
    expect(l.pageScrollsAcross).toBe(false);
    // The main region has focus after the page change, and draws no ring under the content.
    expect(l.mainFocused).toBe(true);
    expect(l.mainOutline).toBe('none');
    await page.close();
  },
  600_000,
);

it('raised no error on the page', () => {
  expect(errors).toEqual([]);
});
