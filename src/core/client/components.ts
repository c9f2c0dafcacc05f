/**
 * What the browser script sends the collector: components of the device (stable ones for its
 * key, volatile ones as claims) and automation or tampering evidence. A fingerprint is evidence,
 * not identity: two identical machines collide, and a browser update may change a rendering
 * hash once. The key is built only from what does not change with a browser's version, its
 * window, its languages or where it travels (timezone), so that the same device keeps its key
 * through those.
 *
 * Pure: no I/O.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { invalidParameters } from './problems';
import type { Components } from './wire';

/** What the script sends (one definition for both sides: src/browser imports it too). */
export type { Components } from './wire';

/** The automation evidence the script reports, and what each means to the engine. */
export const AUTOMATION: Readonly<Record<string, 'bot' | 'headless' | 'tampered'>> = {
  webdriver: 'bot', // navigator.webdriver is true (Selenium, Playwright, Puppeteer by default)
  automation_globals: 'bot', // window properties left by Selenium, PhantomJS, Nightmare, CDP drivers
  headless_user_agent: 'headless', // HeadlessChrome in the user agent or its client hints
  headless_window: 'headless', // no window chrome (outer size 0), no plugins in desktop Chrome
  tampered_natives: 'tampered', // native functions whose source is not native (a stealth plugin)
  inconsistent_platform: 'tampered', // navigator.platform contradicts the user agent
};

const MAX_STRING = 512;
const MAX_LIST = 64;

const str = z
  .string({ invalid_type_error: `must be a string of at most ${MAX_STRING} characters` })
  .max(MAX_STRING, `must be a string of at most ${MAX_STRING} characters`);
const NUM = 'must be a number between 0 and 1000000';
const num = z.number({ invalid_type_error: NUM }).finite(NUM).min(0, NUM).max(1e6, NUM).nullish();
const LIST = `must be a list of at most ${MAX_LIST} short strings`;
const list = (item: z.ZodTypeAny) =>
  z.array(item, { invalid_type_error: LIST }).max(MAX_LIST, LIST).nullish();
const shortString = z.string({ invalid_type_error: LIST }).max(128, LIST);
const automationNames = Object.keys(AUTOMATION) as [string, ...string[]];
const WEBGL = 'must be {vendor, renderer} strings';

/**
 * The collector's `components` object, as readComponents validates it (and as the OpenAPI
 * document describes it). A member it does not know is refused, named (the script sends only
 * these: anything else is another client, or a mistake it should hear about).
 */
const OFFSET_RANGE = 'must be a whole number of minutes between -900 and 900';
/** The offset of the client's timezone from UTC in whole minutes, as browsers and phones report it (both schemas below). */
export const timezoneOffsetSchema = z
  .number({ invalid_type_error: OFFSET_RANGE })
  .int(OFFSET_RANGE)
  .min(-900, OFFSET_RANGE)
  .max(900, OFFSET_RANGE)
  .nullish();

export const componentsSchema = z
  .object(
    {
      userAgent: z
        .string({
          required_error: 'is required',
          invalid_type_error: `must be a string of at most ${MAX_STRING} characters`,
        })
        .max(MAX_STRING, `must be a string of at most ${MAX_STRING} characters`),
      languages: list(shortString),
      timezone: str.nullish(),
      timezoneOffset: timezoneOffsetSchema,
      platform: str.nullish(),
      screen: z
        .object(
          { width: num, height: num, depth: num, pixelRatio: num },
          { invalid_type_error: 'must be an object' },
        )
        .strict()
        .nullish(),
      cores: num,
      memory: num,
      touchPoints: num,
      canvas: str.nullish(),
      audio: str.nullish(),
      webgl: z
        .object(
          {
            vendor: z.string({ required_error: WEBGL, invalid_type_error: WEBGL }).max(MAX_STRING, WEBGL),
            renderer: z.string({ required_error: WEBGL, invalid_type_error: WEBGL }).max(MAX_STRING, WEBGL),
          },
          { invalid_type_error: WEBGL },
        )
        .strict()
        .nullish(),
      fonts: list(shortString),
      profile: str.regex(/^[A-Za-z0-9_-]{16,64}$/, 'must be 16 to 64 letters, digits, - or _').nullish(),
      automation: list(
        z.enum(automationNames, {
          errorMap: () => ({ message: `unknown values (known: ${automationNames.join(', ')})` }),
        }),
      ),
    },
    { invalid_type_error: 'must be an object' },
  )
  .strict();

/** Validate the collector's `components` object; throws InvalidParameters naming each problem. */
export function readComponents(value: unknown): Components {
  const r = componentsSchema.safeParse(value);
  if (!r.success) {
    // A problem is named by its component (`components.fonts`), a screen's or WebGL's by its
    // member, an unknown member by its name.
    throw invalidParameters(r.error.issues, {
      prefix: 'components',
      depth: (path) => ((path[0] === 'screen' || path[0] === 'webgl') && typeof path[1] === 'string' ? 2 : 1),
    });
  }
  const c = r.data;
  const s = c.screen;
  return {
    userAgent: c.userAgent,
    languages: c.languages ?? [],
    timezone: c.timezone ?? null,
    timezoneOffset: c.timezoneOffset ?? null,
    platform: c.platform ?? null,
    screen: s
      ? { width: s.width ?? 0, height: s.height ?? 0, depth: s.depth ?? 0, pixelRatio: s.pixelRatio ?? 0 }
      : null,
    cores: c.cores ?? null,
    memory: c.memory ?? null,
    touchPoints: c.touchPoints ?? null,
    canvas: c.canvas ?? null,
    audio: c.audio ?? null,
    webgl: c.webgl ? { vendor: c.webgl.vendor, renderer: c.webgl.renderer } : null,
    fonts: c.fonts ?? [],
    profile: c.profile ?? null,
    automation: c.automation ?? [],
  };
}

/**
 * The device key. With the script's profile id (kept in the browser profile's storage): that id,
 * which survives browser updates and tells two profiles of one machine apart. Without it (storage
 * blocked, a client of its own): a hash of the components that stay the same on one device
 * whatever its browser version, window size, languages or location (rendering hashes, graphics,
 * fonts, hardware, platform).
 */
export function deviceKeyOf(c: Components): string {
  if (c.profile) return createHash('sha256').update(`profile:${c.profile}`).digest('base64url').slice(0, 22);
  return machineKeyOf(c);
}

/** A hash of the machine's stable components (identical machines share it). */
export function machineKeyOf(c: Components): string {
  const stable = [
    c.canvas ?? '',
    c.audio ?? '',
    c.webgl?.vendor ?? '',
    c.webgl?.renderer ?? '',
    [...c.fonts].sort().join(','),
    c.platform ?? '',
    c.cores ?? '',
    c.memory ?? '',
    c.touchPoints ?? '',
    c.screen?.depth ?? '',
  ];
  return createHash('sha256').update(JSON.stringify(stable)).digest('base64url').slice(0, 22);
}

/**
 * The machine under the browser profile, as a vector of short hashes: `<base>.<canvas>.<audio>.
 * <webgl>.<fonts>`, the base being the platform and hardware (platform, CPU cores, memory, touch
 * points, colour depth). A private window or cleared storage changes the profile id, not these;
 * a browser update may change one rendering hash, which `sameMachine` (core/devices/machine.ts)
 * tolerates. Null when the page reported no rendering at all (nothing tells machines apart).
 */
export function machineVectorOf(c: Components): string | null {
  const h = (v: string) => createHash('sha256').update(v).digest('base64url').slice(0, 6);
  const part = (v: string | null | undefined) => (v ? h(v) : '-');
  if (!c.canvas && !c.audio && !c.webgl) return null;
  const base = h(
    JSON.stringify([
      c.platform ?? '',
      c.cores ?? '',
      c.memory ?? '',
      c.touchPoints ?? '',
      c.screen?.depth ?? '',
    ]),
  );
  const webgl = c.webgl ? `${c.webgl.vendor}|${c.webgl.renderer}` : null;
  return [
    base,
    part(c.canvas),
    part(c.audio),
    part(webgl),
    part(c.fonts.length ? [...c.fonts].sort().join(',') : null),
  ].join('.');
}

/** The browser's first language, as a primary tag (`en`, `pt`), or null. */
export function primaryLanguageOf(c: Components): string | null {
  const first = c.languages[0];
  const tag = first ? first.trim().toLowerCase().split(/[-_]/)[0] : '';
  return tag && /^[a-z]{2,8}$/.test(tag) ? tag : null;
}

/** The automation evidence, including what the server sees for itself in the components. */
export function automationOf(c: Components): string[] {
  const found = new Set(c.automation);
  if (/HeadlessChrome/i.test(c.userAgent)) found.add('headless_user_agent');
  return [...found].sort();
}
