/**
 * @rampart/browser: Rampart's browser client. A page calls `configure({ publishableKey })` once
 * and `createRequestToken()` before each login or sign-up (or `injectTokenOnSubmit(form)`), and
 * its backend forwards the token to Rampart as `request_token`, the way Castle's server SDKs
 * forward Castle's. The token is a short-lived, single-use, server-signed reference to what the
 * page showed: the device's stable components and any sign of automation (docs/client.md).
 *
 * Castle's front-end names too (`exposeCastleNames`, started by itself when the script tag names
 * the key: `rampart.js?pk_…`): a global `_castle` whose `getClientId` answers a token at once,
 * the `__cid` cookie and `castle_client_id` form fields, kept filled with a fresh token, so that
 * a page that used Castle's script changes only its script tag and its backend nothing.
 *
 * Built by scripts/build-browser.js into an ES module (rampart.mjs) and a classic script
 * (rampart.js, `window.Rampart`), which Rampart serves at /client/v1/. No dependencies; one
 * random profile id in localStorage tells two profiles of one machine apart; the `__cid` cookie
 * only with Castle's names.
 */

import type { Components } from '../core/client/wire';

export interface RampartOptions {
  /** The environment's publishable key (`pk_…`): safe in a page. */
  publishableKey: string;
  /** Where Rampart answers (default: the origin this script was loaded from). */
  endpoint?: string;
}

let options: { publishableKey: string; endpoint: string } | null = null;
let stable: Promise<Components> | null = null;

const script = document.currentScript instanceof HTMLScriptElement ? document.currentScript : null;
const scriptOrigin = (() => {
  try {
    return script?.src ? new URL(script.src).origin : location.origin;
  } catch {
    return location.origin;
  }
})();

export function configure(o: RampartOptions): void {
  if (!o || typeof o.publishableKey !== 'string' || !o.publishableKey.startsWith('pk_')) throw new Error('Rampart: configure({ publishableKey: "pk_…" })');
  options = { publishableKey: o.publishableKey, endpoint: (o.endpoint ?? scriptOrigin).replace(/\/+$/, '') };
}

/** A token and when it stops being accepted (this page's clock). */
interface Minted {
  token: string;
  expiresAt: number;
}

/** A fresh token for one login or sign-up (valid five minutes, for one flow). */
export async function createRequestToken(): Promise<string> {
  return (await mint()).token;
}

async function mint(): Promise<Minted> {
  if (!options) throw new Error('Rampart: call configure() first');
  stable ??= collect();
  const components = await stable;
  // The automation evidence is read again each time: a driver can attach after the page loaded.
  const body = JSON.stringify({ publishable_key: options.publishableKey, components: { ...components, automation: automation() } });
  // text/plain: a simple cross-origin request, no preflight.
  const res = await fetch(`${options.endpoint}/v1/client/token`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body, credentials: 'omit', mode: 'cors' });
  const answer = (await res.json()) as { token?: string; expires_in?: number; message?: string };
  if (!res.ok || typeof answer.token !== 'string') throw new Error(`Rampart: ${answer.message ?? `collector answered ${res.status}`}`);
  const ttl = typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in : 300;
  return { token: answer.token, expiresAt: Date.now() + ttl * 1000 };
}

/** Put a fresh token into `form` (a hidden field, by default `rampart_request_token`) when it is submitted. */
export function injectTokenOnSubmit(form: HTMLFormElement, field = 'rampart_request_token'): void {
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const done = (token: string) => {
      setField(form, field, token);
      // HTMLFormElement.submit() does not fire 'submit' again.
      form.submit();
    };
    // Without a token the login still goes through: the backend scores it with less evidence.
    createRequestToken().then(done, () => done(''));
  });
}

/** Set (adding it when missing) the hidden field `name` of `form`. */
function setField(form: HTMLFormElement, name: string, value: string): void {
  let input = Array.from(form.querySelectorAll('input')).find((i) => i.name === name);
  if (!input) {
    input = document.createElement('input');
    input.type = 'hidden';
    input.name = name;
    form.appendChild(input);
  }
  input.value = value;
}

// ---------------------------------------------------------------------------------------------
// Castle's front-end names: `_castle('getClientId')`, the `__cid` cookie, `castle_client_id`.

export interface CastleNamesOptions {
  /** The cookie's domain (default: this page's host only), e.g. `shop.example` for www. and api. */
  cookieDomain?: string;
}

/** The cookie and the form field Castle's web client fills, and its server SDKs read. */
const CID_COOKIE = '__cid';
const CID_FIELD = 'castle_client_id';
/** A token is replaced this long before it expires (and is not handed out closer to it than GRACE_MS). */
const RENEW_BEFORE_MS = 60_000;
const GRACE_MS = 10_000;
/** How long a submit waits for a first token before it goes without one. */
const SUBMIT_WAIT_MS = 3000;

let castle: { cookieDomain: string | null } | null = null;
let held: (Minted & { handedOut: boolean }) | null = null;
let renewing: Promise<void> | null = null;
let renewTimer: ReturnType<typeof setTimeout> | undefined;
const heldBack = new WeakSet<HTMLFormElement>();

/**
 * Castle's web client's names, backed by Rampart's tokens: a global `_castle` (calls queued in
 * `_castle.q` before this script ran are run now), whose `getClientId` answers the current token
 * at once; the `__cid` cookie and every `castle_client_id` field hold it. A token serves one
 * login flow: once handed out (by getClientId or a form's submit) it is replaced by a fresh one,
 * as it is a minute before it expires, and when the page comes back from the back-forward cache.
 */
export function exposeCastleNames(o: CastleNamesOptions = {}): void {
  if (!options) throw new Error('Rampart: call configure() first');
  const first = castle === null;
  castle = { cookieDomain: o.cookieDomain ?? null };
  if (!first) return;
  const w = window as unknown as { _castle?: unknown };
  const queued = typeof w._castle === 'function' ? (w._castle as { q?: unknown }).q : undefined;
  w._castle = castleCommand;
  if (Array.isArray(queued)) for (const args of queued) attempt(() => castleCommand(...Array.from(args as ArrayLike<unknown>)), undefined);
  document.addEventListener('submit', onSubmit, true);
  window.addEventListener('pageshow', (e) => {
    if (e.persisted) void renew();
  });
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && !usable()) void renew();
  });
  void renew();
}

/** The current token, at once (empty before the first one arrived); handing it out starts its flow. */
export function getClientId(): string {
  const h = usable();
  if (!h) {
    void renew();
    return '';
  }
  handOut(h);
  return h.token;
}

/** `_castle(command, …args)`: the commands a page written for Castle's web client calls. */
function castleCommand(command?: unknown, ...args: unknown[]): unknown {
  switch (command) {
    case 'getClientId':
      return getClientId();
    case 'createRequestToken':
      return createRequestToken();
    case 'setAppId':
    case 'setPublishableKey':
    case 'configure': {
      // Castle's app id means nothing here: only a publishable key (`pk_…`) changes the key.
      const key = typeof args[0] === 'string' ? args[0] : (args[0] as { pk?: unknown } | undefined)?.pk;
      if (typeof key === 'string' && /^pk_[A-Za-z0-9_-]{8,64}$/.test(key) && key !== options?.publishableKey) {
        configure({ publishableKey: key, endpoint: options?.endpoint });
        held = null;
        void renew();
      }
      return undefined;
    }
    default:
      // identify, track, page, trackPageview, setUserId, secure…: Castle's own analytics, nothing to do here.
      return undefined;
  }
}

/** The held token while it is good for a flow (not within GRACE_MS of its expiry). */
function usable(): (Minted & { handedOut: boolean }) | null {
  return held && held.expiresAt - Date.now() > GRACE_MS ? held : null;
}

function handOut(h: Minted & { handedOut: boolean }): void {
  // The cookie says what this page hands out (another tab of the site may have written its own).
  writeCookie(h);
  if (h.handedOut) return;
  h.handedOut = true;
  // The next flow gets a token of its own; this one stays current until that one arrives.
  setTimeout(() => void renew(), 0);
}

/** Fetch a fresh token into the cookie and the fields (one fetch at a time). */
function renew(): Promise<void> {
  renewing ??= mint()
    .then(
      (m) => {
        held = { ...m, handedOut: false };
        writeCookie(held);
        for (const input of Array.from(document.querySelectorAll('input'))) if (input.name === CID_FIELD) input.value = m.token;
        schedule(Math.max(5000, m.expiresAt - Date.now() - RENEW_BEFORE_MS));
      },
      () => schedule(30_000),
    )
    .finally(() => {
      renewing = null;
    });
  return renewing;
}

function schedule(ms: number): void {
  clearTimeout(renewTimer);
  renewTimer = setTimeout(() => void renew(), ms);
}

function writeCookie(m: Minted): void {
  const maxAge = Math.max(0, Math.floor((m.expiresAt - Date.now()) / 1000));
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  const domain = castle?.cookieDomain ? `; Domain=${castle.cookieDomain}` : '';
  // A `__cid` left by Castle's own script (a long-lived id, perhaps on a parent domain) would be
  // read before ours: expired wherever it may have been set.
  if (document.cookie.split(/;\s*/).some((c) => c.startsWith(`${CID_COOKIE}=`) && !c.startsWith(`${CID_COOKIE}=rpt1.`))) {
    const labels = location.hostname.split('.');
    document.cookie = `${CID_COOKIE}=; Path=/; Max-Age=0`;
    for (let i = 0; i < labels.length - 1; i++) document.cookie = `${CID_COOKIE}=; Path=/; Max-Age=0; Domain=${labels.slice(i).join('.')}`;
  }
  // Max-Age is the token's life: the browser never sends an expired token.
  document.cookie = `${CID_COOKIE}=${m.token}; Path=/; Max-Age=${maxAge}; SameSite=Lax${secure}${domain}`;
}

/**
 * A login form's submit (capture phase, before the page's own handlers; a form with a password
 * field or a `castle_client_id` field): that field filled (added when missing), the token handed
 * out. Without a token yet, the submit is held until one arrives (at most SUBMIT_WAIT_MS) and
 * made again, so that the page's own handler, calling getClientId, finds it. Other forms go on.
 */
function onSubmit(e: Event): void {
  const form = e.target;
  if (!(form instanceof HTMLFormElement) || !Array.from(form.querySelectorAll('input')).some((i) => i.name === CID_FIELD || i.type === 'password')) return;
  const h = usable();
  if (!h) {
    if (heldBack.has(form)) {
      heldBack.delete(form);
      return;
    }
    heldBack.add(form);
    e.preventDefault();
    e.stopImmediatePropagation();
    const submitter = (e as SubmitEvent).submitter;
    const again = () => {
      if (typeof form.requestSubmit === 'function') form.requestSubmit(submitter instanceof HTMLElement && (submitter as HTMLButtonElement).form === form ? submitter : undefined);
      else {
        heldBack.delete(form);
        const next = usable();
        if (next) setField(form, CID_FIELD, next.token);
        form.submit();
      }
    };
    void Promise.race([renew(), new Promise((r) => setTimeout(r, SUBMIT_WAIT_MS))]).then(again);
    return;
  }
  heldBack.delete(form);
  setField(form, CID_FIELD, h.token);
  handOut(h);
}

/** The key the script tag names: `rampart.js?pk_…` (as Castle's `c.js?<app id>`), `?pk=pk_…` or `data-publishable-key`. */
function keyFromScriptTag(): string | null {
  if (!script) return null;
  const fromData = script.dataset.publishableKey;
  let fromSrc: string | null = null;
  try {
    const url = new URL(script.src);
    fromSrc = url.searchParams.get('pk') ?? url.search.slice(1);
  } catch {
    fromSrc = null;
  }
  for (const k of [fromData, fromSrc]) if (k && /^pk_[A-Za-z0-9_-]{8,64}$/.test(k)) return k;
  return null;
}

/** A 53-bit string hash (cyrb53): stable, fast, not a security measure. */
function hash(s: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}

const attempt = <T>(f: () => T, fallback: T): T => {
  try {
    return f();
  } catch {
    return fallback;
  }
};

async function collect(): Promise<Components> {
  const n = navigator as Navigator & { deviceMemory?: number };
  return {
    userAgent: n.userAgent,
    languages: attempt(() => [...(n.languages ?? [n.language])].slice(0, 10), []),
    timezone: attempt(() => Intl.DateTimeFormat().resolvedOptions().timeZone ?? null, null),
    timezoneOffset: new Date().getTimezoneOffset(),
    platform: n.platform || null,
    screen: { width: screen.width, height: screen.height, depth: screen.colorDepth, pixelRatio: window.devicePixelRatio || 1 },
    cores: n.hardwareConcurrency || null,
    memory: n.deviceMemory ?? null,
    touchPoints: n.maxTouchPoints ?? null,
    canvas: attempt(canvasHash, null),
    audio: await audioHash().catch(() => null),
    webgl: attempt(webgl, null),
    fonts: attempt(fonts, []),
    profile: attempt(profile, null),
    automation: [],
  };
}

function canvasHash(): string | null {
  const c = document.createElement('canvas');
  c.width = 240;
  c.height = 60;
  const g = c.getContext('2d');
  if (!g) return null;
  g.textBaseline = 'alphabetic';
  g.fillStyle = '#f60';
  g.fillRect(100, 1, 62, 20);
  g.fillStyle = '#069';
  g.font = '15px "Times New Roman", serif';
  g.fillText('Rampart, \u{1F6E1} 0.1 <canvas>', 2, 15);
  g.fillStyle = 'rgba(102, 204, 0, 0.7)';
  g.font = '18px Arial, sans-serif';
  g.fillText('Cwm fjordbank glyphs vext quiz', 4, 45);
  g.globalCompositeOperation = 'multiply';
  g.beginPath();
  g.arc(200, 30, 20, 0, Math.PI * 2);
  g.fillStyle = 'rgb(255,0,255)';
  g.fill();
  return hash(c.toDataURL());
}

async function audioHash(): Promise<string | null> {
  const Ctx = (window as Window & { OfflineAudioContext?: typeof OfflineAudioContext }).OfflineAudioContext;
  if (!Ctx) return null;
  const ctx = new Ctx(1, 5000, 44100);
  const osc = ctx.createOscillator();
  osc.type = 'triangle';
  osc.frequency.value = 10000;
  const comp = ctx.createDynamicsCompressor();
  comp.threshold.value = -50;
  comp.knee.value = 40;
  comp.ratio.value = 12;
  comp.attack.value = 0;
  comp.release.value = 0.25;
  osc.connect(comp);
  comp.connect(ctx.destination);
  osc.start(0);
  const rendered = await Promise.race([ctx.startRendering(), new Promise<null>((r) => setTimeout(() => r(null), 1000))]);
  if (!rendered) return null;
  const data = rendered.getChannelData(0);
  let sum = 0;
  for (let i = 4500; i < 5000; i++) sum += Math.abs(data[i] ?? 0);
  return sum.toString();
}

function webgl(): { vendor: string; renderer: string } | null {
  const gl = document.createElement('canvas').getContext('webgl') as WebGLRenderingContext | null;
  if (!gl) return null;
  const info = gl.getExtension('WEBGL_debug_renderer_info');
  const vendor = info ? gl.getParameter(info.UNMASKED_VENDOR_WEBGL) : gl.getParameter(gl.VENDOR);
  const renderer = info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER);
  return { vendor: String(vendor).slice(0, 256), renderer: String(renderer).slice(0, 256) };
}

const FONTS = ['Arial', 'Arial Black', 'Calibri', 'Cambria', 'Comic Sans MS', 'Consolas', 'Courier New', 'DejaVu Sans', 'Georgia', 'Helvetica', 'Helvetica Neue', 'Impact', 'Liberation Sans', 'Lucida Grande', 'Menlo', 'Monaco', 'Noto Sans', 'Roboto', 'Segoe UI', 'SF Pro Text', 'Tahoma', 'Times New Roman', 'Trebuchet MS', 'Ubuntu', 'Verdana'];

/** Fonts installed: text measured in each font falls back to a different width when it is missing. */
function fonts(): string[] {
  const g = document.createElement('canvas').getContext('2d');
  if (!g) return [];
  const text = 'mmmmmmmmmmlli10OQ@#';
  const width = (family: string) => {
    g.font = `72px ${family}`;
    return g.measureText(text).width;
  };
  const bases = ['monospace', 'serif', 'sans-serif'].map((b) => [b, width(b)] as const);
  return FONTS.filter((f) => bases.some(([b, w]) => width(`"${f}", ${b}`) !== w));
}

/** A random id kept in this profile's storage for this site: two profiles of one machine differ. */
function profile(): string | null {
  const KEY = 'rampart.profile';
  let id = localStorage.getItem(KEY);
  if (!id || !/^[A-Za-z0-9_-]{16,64}$/.test(id)) {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    id = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    localStorage.setItem(KEY, id);
  }
  return id;
}

const AUTOMATION_GLOBALS = ['__nightmare', '_phantom', 'callPhantom', 'domAutomation', 'domAutomationController', '__selenium_unwrapped', '__webdriver_evaluate', '__driver_evaluate', '__webdriver_script_fn', '__fxdriver_unwrapped', '_Selenium_IDE_Recorder', '__playwright__binding__', '__pwInitScripts'];

/** Signs of a driven, headless or tampered browser (names the server knows: core/client/components.ts). */
function automation(): string[] {
  const found: string[] = [];
  const n = navigator as Navigator & { userAgentData?: { brands?: { brand: string }[] } };
  if (n.webdriver === true) found.push('webdriver');
  const w = window as unknown as Record<string, unknown>;
  if (AUTOMATION_GLOBALS.some((k) => k in w) || Object.keys(document).some((k) => /^\$?cdc_|^\$wdc_/.test(k))) found.push('automation_globals');
  if (/HeadlessChrome/.test(n.userAgent) || (n.userAgentData?.brands ?? []).some((b) => /Headless/i.test(b.brand))) found.push('headless_user_agent');
  const desktopChrome = /Chrome\//.test(n.userAgent) && !/Mobile|Android/.test(n.userAgent);
  if ((window.outerWidth === 0 && window.outerHeight === 0) || (desktopChrome && n.plugins.length === 0)) found.push('headless_window');
  const natives: unknown[] = [Function.prototype.toString, n.permissions?.query, HTMLCanvasElement.prototype.toDataURL, Object.prototype.hasOwnProperty.call(Navigator.prototype, 'webdriver') ? Object.getOwnPropertyDescriptor(Navigator.prototype, 'webdriver')?.get : undefined];
  if (natives.some((f) => typeof f === 'function' && !/\[native code\]\s*\}\s*$/.test(Function.prototype.toString.call(f)))) found.push('tampered_natives');
  const ua = n.userAgent;
  const p = (n.platform || '').toLowerCase();
  if ((/Windows/.test(ua) && p && !p.startsWith('win')) || (/Macintosh/.test(ua) && p && !p.startsWith('mac')) || (/iPhone|iPad/.test(ua) && p && !/iphone|ipad|mac/.test(p))) found.push('inconsistent_platform');
  return found;
}

/** The key Castle's snippet queued before the script ran: `_castle('setPublishableKey', 'pk_…')` (or `setAppId`, `configure`). */
function keyFromQueue(): string | null {
  const stub = (window as unknown as { _castle?: unknown })._castle;
  const queued = typeof stub === 'function' ? (stub as { q?: unknown }).q : undefined;
  if (!Array.isArray(queued)) return null;
  for (const args of queued) {
    const [command, value] = Array.from(args as ArrayLike<unknown>);
    const key = typeof value === 'string' ? value : (value as { pk?: unknown } | undefined)?.pk;
    if ((command === 'setPublishableKey' || command === 'setAppId' || command === 'configure') && typeof key === 'string' && /^pk_[A-Za-z0-9_-]{8,64}$/.test(key)) return key;
  }
  return null;
}

// A script tag naming its key (or Castle's snippet queuing it) starts Castle's names by itself:
// the page changes only that tag (or the key it queues).
attempt(() => {
  const key = keyFromScriptTag() ?? keyFromQueue();
  if (key) {
    configure({ publishableKey: key });
    exposeCastleNames({ cookieDomain: script?.dataset.cookieDomain });
  }
}, undefined);
