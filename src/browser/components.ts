/**
 * What the page collects of the device (docs/client.md, "The device key, and the machine under
 * it"): its stable components, rendering hashes, installed fonts, one random profile id in the
 * site's localStorage, and the signs of automation (read again for every token: a driver can
 * attach after the page loaded). Names and bounds as the collector checks them
 * (core/client/components.ts).
 */
import type { Components } from '../core/client/wire';
import { attempt, hash } from './util';

/** What the device shows, read once per page (`storageKey`: where the profile id is kept in localStorage). */
export async function collect(storageKey: string): Promise<Components> {
  const n = navigator as Navigator & { deviceMemory?: number };
  return {
    userAgent: n.userAgent,
    languages: attempt(() => [...(n.languages ?? [n.language])].slice(0, 10), []),
    timezone: attempt(() => Intl.DateTimeFormat().resolvedOptions().timeZone ?? null, null),
    timezoneOffset: new Date().getTimezoneOffset(),
    platform: n.platform || null,
    screen: {
      width: screen.width,
      height: screen.height,
      depth: screen.colorDepth,
      pixelRatio: window.devicePixelRatio || 1,
    },
    cores: n.hardwareConcurrency || null,
    memory: n.deviceMemory ?? null,
    touchPoints: n.maxTouchPoints ?? null,
    canvas: attempt(canvasHash, null),
    audio: await audioHash().catch(() => null),
    webgl: attempt(webgl, null),
    fonts: attempt(fonts, []),
    profile: attempt(() => profile(storageKey), null),
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
  const rendered = await Promise.race([
    ctx.startRendering(),
    new Promise<null>((r) => setTimeout(() => r(null), 1000)),
  ]);
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

const FONTS = [
  'Arial',
  'Arial Black',
  'Calibri',
  'Cambria',
  'Comic Sans MS',
  'Consolas',
  'Courier New',
  'DejaVu Sans',
  'Georgia',
  'Helvetica',
  'Helvetica Neue',
  'Impact',
  'Liberation Sans',
  'Lucida Grande',
  'Menlo',
  'Monaco',
  'Noto Sans',
  'Roboto',
  'Segoe UI',
  'SF Pro Text',
  'Tahoma',
  'Times New Roman',
  'Trebuchet MS',
  'Ubuntu',
  'Verdana',
];

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
function profile(key: string): string | null {
  let id = localStorage.getItem(key);
  if (!id || !/^[A-Za-z0-9_-]{16,64}$/.test(id)) {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    id = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    localStorage.setItem(key, id);
  }
  return id;
}

const AUTOMATION_GLOBALS = [
  '__nightmare',
  '_phantom',
  'callPhantom',
  'domAutomation',
  'domAutomationController',
  '__selenium_unwrapped',
  '__webdriver_evaluate',
  '__driver_evaluate',
  '__webdriver_script_fn',
  '__fxdriver_unwrapped',
  '_Selenium_IDE_Recorder',
  '__playwright__binding__',
  '__pwInitScripts',
];

/** Signs of a driven, headless or tampered browser (names the server knows: core/client/components.ts). */
export function automation(): string[] {
  const found: string[] = [];
  const n = navigator as Navigator & { userAgentData?: { brands?: { brand: string }[] } };
  if (n.webdriver === true) found.push('webdriver');
  const w = window as unknown as Record<string, unknown>;
  if (AUTOMATION_GLOBALS.some((k) => k in w) || Object.keys(document).some((k) => /^\$?cdc_|^\$wdc_/.test(k)))
    found.push('automation_globals');
  if (
    /HeadlessChrome/.test(n.userAgent) ||
    (n.userAgentData?.brands ?? []).some((b) => /Headless/i.test(b.brand))
  )
    found.push('headless_user_agent');
  const desktopChrome = /Chrome\//.test(n.userAgent) && !/Mobile|Android/.test(n.userAgent);
  if ((window.outerWidth === 0 && window.outerHeight === 0) || (desktopChrome && n.plugins.length === 0))
    found.push('headless_window');
  const natives: unknown[] = [
    Function.prototype.toString,
    n.permissions?.query,
    HTMLCanvasElement.prototype.toDataURL,
    Object.prototype.hasOwnProperty.call(Navigator.prototype, 'webdriver')
      ? Object.getOwnPropertyDescriptor(Navigator.prototype, 'webdriver')?.get
      : undefined,
  ];
  if (
    natives.some(
      (f) => typeof f === 'function' && !/\[native code\]\s*\}\s*$/.test(Function.prototype.toString.call(f)),
    )
  )
    found.push('tampered_natives');
  const ua = n.userAgent;
  const p = (n.platform || '').toLowerCase();
  if (
    (/Windows/.test(ua) && p && !p.startsWith('win')) ||
    (/Macintosh/.test(ua) && p && !p.startsWith('mac')) ||
    (/iPhone|iPad/.test(ua) && p && !/iphone|ipad|mac/.test(p))
  )
    found.push('inconsistent_platform');
  return found;
}
