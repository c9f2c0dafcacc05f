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
import { InvalidParameters, type FieldProblem } from '../errors';
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

/** Validate the collector's `components` object; throws InvalidParameters naming each problem. */
export function readComponents(value: unknown): Components {
  const p: FieldProblem[] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidParameters([{ field: 'components', message: 'must be an object' }]);
  const c = value as Record<string, unknown>;
  const str = (name: string, required = false): string | null => {
    const v = c[name];
    if (v === undefined || v === null) {
      if (required) p.push({ field: `components.${name}`, message: 'is required' });
      return null;
    }
    if (typeof v !== 'string' || v.length > MAX_STRING) {
      p.push({ field: `components.${name}`, message: `must be a string of at most ${MAX_STRING} characters` });
      return null;
    }
    return v;
  };
  const num = (name: string, v: unknown = c[name]): number | null => {
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 1e6) {
      p.push({ field: `components.${name}`, message: 'must be a number between 0 and 1000000' });
      return null;
    }
    return v;
  };
  const list = (name: string, allowed?: ReadonlySet<string>): string[] => {
    const v = c[name];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v) || v.length > MAX_LIST || !v.every((x) => typeof x === 'string' && x.length <= 128)) {
      p.push({ field: `components.${name}`, message: `must be a list of at most ${MAX_LIST} short strings` });
      return [];
    }
    const out = v as string[];
    const unknown = allowed ? out.filter((x) => !allowed.has(x)) : [];
    if (unknown.length) p.push({ field: `components.${name}`, message: `unknown values: ${unknown.slice(0, 5).join(', ')}` });
    return out;
  };
  const offset = (v: unknown): number | null => {
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < -900 || v > 900) {
      p.push({ field: 'components.timezoneOffset', message: 'must be a whole number of minutes between -900 and 900' });
      return null;
    }
    return v;
  };
  const userAgent = str('userAgent', true) ?? '';
  const timezone = str('timezone');
  const platform = str('platform');
  const canvas = str('canvas');
  const profile = str('profile');
  if (profile !== null && !/^[A-Za-z0-9_-]{16,64}$/.test(profile)) p.push({ field: 'components.profile', message: 'must be 16 to 64 letters, digits, - or _' });
  const audio = str('audio');
  let screen: Components['screen'] = null;
  if (c.screen !== undefined && c.screen !== null) {
    const s = c.screen as Record<string, unknown>;
    if (typeof s !== 'object' || Array.isArray(s)) p.push({ field: 'components.screen', message: 'must be an object' });
    else screen = { width: num('screen.width', s.width) ?? 0, height: num('screen.height', s.height) ?? 0, depth: num('screen.depth', s.depth) ?? 0, pixelRatio: num('screen.pixelRatio', s.pixelRatio) ?? 0 };
  }
  let webgl: Components['webgl'] = null;
  if (c.webgl !== undefined && c.webgl !== null) {
    const w = c.webgl as Record<string, unknown>;
    if (typeof w !== 'object' || Array.isArray(w) || typeof w.vendor !== 'string' || typeof w.renderer !== 'string' || w.vendor.length > MAX_STRING || w.renderer.length > MAX_STRING) {
      p.push({ field: 'components.webgl', message: 'must be {vendor, renderer} strings' });
    } else webgl = { vendor: w.vendor, renderer: w.renderer };
  }
  const out: Components = {
    userAgent,
    languages: list('languages'),
    timezone,
    timezoneOffset: offset(c.timezoneOffset),
    platform,
    screen,
    cores: num('cores'),
    memory: num('memory'),
    touchPoints: num('touchPoints'),
    canvas,
    audio,
    webgl,
    fonts: list('fonts'),
    profile,
    automation: list('automation', new Set(Object.keys(AUTOMATION))),
  };
  if (p.length) throw new InvalidParameters(p);
  return out;
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
  const stable = [c.canvas ?? '', c.audio ?? '', c.webgl?.vendor ?? '', c.webgl?.renderer ?? '', [...c.fonts].sort().join(','), c.platform ?? '', c.cores ?? '', c.memory ?? '', c.touchPoints ?? '', c.screen?.depth ?? ''];
  return createHash('sha256').update(JSON.stringify(stable)).digest('base64url').slice(0, 22);
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
