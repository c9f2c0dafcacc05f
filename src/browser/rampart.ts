/**
 * @rampart/browser: Rampart's browser client. A page calls `configure({ publishableKey })` once
 * and `createRequestToken()` before each login or sign-up (or `injectTokenOnSubmit(form)`), and
 * its backend forwards the token to Rampart as `request_token`, the way Castle's server SDKs
 * forward Castle's. The token is a short-lived, single-use, server-signed reference to what the
 * page showed: the device's stable components and any sign of automation (docs/client.md).
 *
 * Each token costs the page a small proof of work, solved in the background from `configure()` on,
 * and carries a summary of what happened on the page before it was asked for (counts of key,
 * pointer, paste and input events, how the password was entered; nothing typed): one a page pays
 * once, a script per attempt (core/client/proof.ts, docs/client.md).
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

import type { Behaviour, Components } from '../core/client/wire';

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
  // The first token's proof of work, paid now, while the page's user reads and types.
  prepared = null;
  void prepare();
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

async function mint(ahead = false): Promise<Minted> {
  if (!options) throw new Error('Rampart: call configure() first');
  const o = options;
  stable ??= collect();
  const components = await stable;
  const send = async (proof: Proof | null) => {
    // The automation evidence is read again each time: a driver can attach after the page loaded.
    const body = JSON.stringify({
      publishable_key: o.publishableKey,
      components: { ...components, automation: automation() },
      ...(proof ? { proof: { challenge: proof.challenge, nonce: proof.nonce } } : {}),
      behaviour: behaviour(ahead),
    });
    // text/plain: a simple cross-origin request, no preflight.
    const res = await fetch(`${o.endpoint}/v1/client/token`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body, credentials: 'omit', mode: 'cors' });
    return { res, answer: (await res.json()) as { token?: string; expires_in?: number; message?: string; fields?: { field?: unknown }[] } };
  };
  const refused = (a: { fields?: { field?: unknown }[] }) => Array.isArray(a.fields) && a.fields.some((f) => typeof f?.field === 'string' && f.field.startsWith('proof'));
  let proof = await takeProof();
  let { res, answer } = await send(proof);
  // A proof refused (a challenge that expired while the laptop slept): once more with a fresh one, then without.
  for (let again = 0; res.status === 422 && proof && refused(answer) && again < 2; again++) {
    proof = again === 0 ? await takeProof() : null;
    ({ res, answer } = await send(proof));
  }
  if (!res.ok || typeof answer.token !== 'string') throw new Error(`Rampart: ${answer.message ?? `collector answered ${res.status}`}`);
  const ttl = typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in : 300;
  return { token: answer.token, expiresAt: Date.now() + ttl * 1000 };
}

/** A challenge answered, ready for the next token. */
interface Proof {
  challenge: string;
  nonce: string;
  expiresAt: number;
}
let prepared: Promise<Proof | null> | null = null;

/** Ask the collector for a challenge and answer it, in the background (null: none to be had, e.g. an older Rampart). */
function prepare(): Promise<Proof | null> {
  prepared ??= (async (): Promise<Proof | null> => {
    if (!options) return null;
    const res = await fetch(`${options.endpoint}/v1/client/challenge`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ publishable_key: options.publishableKey }), credentials: 'omit', mode: 'cors' });
    if (!res.ok) return null;
    const c = (await res.json()) as { challenge?: unknown; salt?: unknown; difficulty?: unknown; expires_in?: unknown };
    if (typeof c.challenge !== 'string' || typeof c.salt !== 'string' || typeof c.difficulty !== 'number') return null;
    const expiresAt = Date.now() + (typeof c.expires_in === 'number' ? c.expires_in : 300) * 1000;
    return { challenge: c.challenge, nonce: await proveWork(c.salt, c.difficulty), expiresAt };
  })().catch(() => null);
  return prepared;
}

/** The prepared proof, taken (a challenge answers one token), or a fresh one when it is too close to expiring. */
async function takeProof(): Promise<Proof | null> {
  const mine = prepare();
  prepared = null;
  const p = await mine;
  if (p && p.expiresAt - Date.now() > 15_000) return p;
  const fresh = prepare();
  prepared = null;
  return fresh;
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
  renewing ??= mint(true)
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

// ---------------------------------------------------------------------------------------------
// The proof of work (docs/client.md): find a nonce such that SHA-256(salt ‖ nonce) begins with
// `difficulty` zero bits. SHA-256 is written out here (one 64-byte block: the salt and the nonce
// fit in one), since WebCrypto's digest is asynchronous and far slower per call.

const K = [
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
].map((k) => k | 0);
const W = new Int32Array(64);

/** The first 32 bits of SHA-256 of `block`'s first `length` bytes (at most 55: one block). */
function sha256Head(block: Uint8Array, length: number): number {
  block.fill(0, length);
  block[length] = 0x80;
  block[62] = (length * 8) >>> 8;
  block[63] = (length * 8) & 0xff;
  for (let i = 0; i < 16; i++) W[i] = (block[4 * i] << 24) | (block[4 * i + 1] << 16) | (block[4 * i + 2] << 8) | block[4 * i + 3];
  for (let i = 16; i < 64; i++) {
    const a = W[i - 15];
    const b = W[i - 2];
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
  }
  let a = 0x6a09e667 | 0;
  let b = 0xbb67ae85 | 0;
  let c = 0x3c6ef372 | 0;
  let d = 0xa54ff53a | 0;
  let e = 0x510e527f | 0;
  let f = 0x9b05688c | 0;
  let g = 0x1f83d9ab | 0;
  let h = 0x5be0cd19 | 0;
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  return (0x6a09e667 + a) >>> 0;
}

/** A slice of the search runs this long before yielding to the page. */
const SLICE_MS = 12;
/** Yield to the page: a message, which a background tab does not throttle as it does timers. */
const yieldToPage = (): Promise<void> =>
  new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });

/**
 * Answer a collector's challenge: the first nonce (0, 1, 2, … in decimal) such that SHA-256 of
 * `salt` followed by it begins with `difficulty` zero bits. Runs on the page's thread in slices of
 * about SLICE_MS, yielding between them, so that the page stays responsive.
 */
export async function proveWork(salt: string, difficulty: number): Promise<string> {
  if (!/^[\x21-\x7e]{1,39}$/.test(salt) || !Number.isInteger(difficulty) || difficulty < 0 || difficulty > 30) throw new Error('Rampart: a challenge has a salt of 1 to 39 printable characters and a difficulty of 0 to 30 bits');
  if (difficulty === 0) return '0';
  const block = new Uint8Array(64);
  for (let i = 0; i < salt.length; i++) block[i] = salt.charCodeAt(i);
  const shift = 32 - difficulty;
  let n = 0;
  for (;;) {
    const until = performance.now() + SLICE_MS;
    do {
      for (let batch = 0; batch < 1024; batch++, n++) {
        const digits = String(n);
        for (let j = 0; j < digits.length; j++) block[salt.length + j] = digits.charCodeAt(j);
        if (sha256Head(block, salt.length + digits.length) >>> shift === 0) return digits;
      }
    } while (performance.now() < until);
    await yieldToPage();
  }
}

// ---------------------------------------------------------------------------------------------
// What the page saw before a token was asked for (docs/client.md): counts of trusted events only
// (a script's dispatched events are not counted), and how the password field was filled. Nothing
// typed is read: not a key, not a value.

const seen = { keys: 0, pointer: 0, pastes: 0, inputs: 0, typed: false, pasted: false };

const isPassword = (t: EventTarget | null): boolean => t instanceof HTMLInputElement && t.type === 'password';

function watch(): void {
  const on = (type: string, f: (e: Event) => void) => document.addEventListener(type, (e) => e.isTrusted && f(e), { capture: true, passive: true });
  on('keydown', () => seen.keys++);
  on('pointerdown', () => seen.pointer++);
  on('paste', (e) => {
    seen.pastes++;
    if (isPassword(e.target)) seen.pasted = true;
  });
  on('input', (e) => {
    seen.inputs++;
    if (!isPassword(e.target)) return;
    const kind = (e as InputEvent).inputType ?? '';
    if (kind === 'insertFromPaste' || kind === 'insertFromDrop') seen.pasted = true;
    else if (/^(insertText|insertCompositionText|deleteContent)/.test(kind)) seen.typed = true;
  });
}

/** The collector's `behaviour`: the page's counts so far; `ahead` when no request needs the token yet. */
function behaviour(ahead: boolean): Behaviour {
  const fields = Array.from(document.querySelectorAll('input')).filter(isPassword) as HTMLInputElement[];
  const password = fields.length === 0 ? 'absent' : seen.pasted ? 'pasted' : seen.typed ? 'typed' : fields.some((f) => f.value !== '') ? 'filled' : 'empty';
  const cap = (n: number) => Math.min(n, 100_000);
  return { elapsedMs: Math.min(86_400_000, Math.max(0, Math.round(performance.now()))), keys: cap(seen.keys), pointer: cap(seen.pointer), pastes: cap(seen.pastes), inputs: cap(seen.inputs), password, ahead };
}

// What the page saw is counted from the moment the script runs.
watch();

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
