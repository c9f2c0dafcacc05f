/**
 * Real headless Chromium for the e2e tests: Debian's `chromium` (or RAMPART_CHROMIUM), driven by
 * puppeteer-core, never downloaded. A browser with a profile directory of its own, and what the
 * console tests do on a page: open one with its errors recorded, sign in, move between pages and
 * wait for text.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

export const CHROMIUM =
  process.env.RAMPART_CHROMIUM ??
  ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

/** Where the console tests write their screenshots: docs/console with RAMPART_UPDATE_SCREENSHOTS=1. */
export const SCREENSHOTS =
  process.env.RAMPART_UPDATE_SCREENSHOTS === '1'
    ? path.resolve(__dirname, '..', '..', 'docs', 'console')
    : path.resolve(__dirname, '..', '..', '.data', 'console-screenshots');

/** Fail at once, saying how to fix it, when there is no Chromium to drive. */
export function requireChromium(): string {
  if (!CHROMIUM)
    throw new Error(
      'Chromium is missing: apt-get install chromium (or set RAMPART_CHROMIUM); .ci/run installs it',
    );
  return CHROMIUM;
}

export interface Chromium {
  browser: Browser;
  /** Close the browser and remove its profile directory. */
  close(): Promise<void>;
}

/** A headless Chromium with a fresh profile directory (`prefix` names it under the system's temporary directory). */
export async function launchChromium(prefix = 'rampart-chromium-'): Promise<Chromium> {
  const executablePath = requireChromium();
  const profile = mkdtempSync(path.join(tmpdir(), prefix));
  try {
    const browser = await puppeteer.launch({
      executablePath,
      headless: true,
      userDataDir: profile,
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
    });
    return {
      browser,
      close: async () => {
        await browser.close().catch(() => undefined);
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(profile, { recursive: true, force: true });
    throw err;
  }
}

/** A page in a fresh browser context (its own cookies), with page errors and console errors (but 4xx answers) recorded in `errors`. */
export async function consolePage(
  browser: Browser,
  errors: string[],
  width = 1366,
  height = 900,
): Promise<Page> {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width, height });
  page.on('pageerror', (err) => errors.push(String(err)));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) errors.push(m.text());
  });
  return page;
}

/** The page's visible text. */
export const pageText = (page: Page): Promise<string> =>
  page.evaluate(() => (globalThis as any).document.body.innerText as string);

/** Go to a console page by its hash (`#/lists`). */
export async function goTo(page: Page, hash: string): Promise<void> {
  await page.evaluate((h) => {
    (globalThis as any).location.hash = h;
  }, hash);
}

/** Wait until the page shows `needle` (and no loading state). */
export async function waitText(page: Page, needle: string, timeout = 15_000): Promise<void> {
  await page.waitForFunction(
    (n) =>
      (globalThis as any).document.body.innerText.includes(n) &&
      !(globalThis as any).document.querySelector('.state.loading'),
    { timeout },
    needle,
  );
}

/** Sign in to the console at `baseUrl` by keyboard: the key field has focus, typing and Enter submit. */
export async function signIn(page: Page, baseUrl: string, key: string): Promise<void> {
  await page.goto(`${baseUrl}/console`, { waitUntil: 'load' });
  await page.waitForSelector('input[name=key]');
  await page.keyboard.type(key);
  await page.keyboard.press('Enter');
  await page.waitForSelector('[data-testid=environment]');
}
