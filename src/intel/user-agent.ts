/**
 * User-Agent parsing into Castle's `user_agent` keys (browser, version, os, platform, device,
 * family, mobile) via ua-parser-js v1 (MIT), plus the device-type classification, automation
 * flags (bot / headless / crawler) from well-known User-Agent markers, and native apps' HTTP
 * stacks (OkHttp, Dalvik, CFNetwork, Alamofire, Ktor, Dart, an app's own `Name/1.2 (…; iOS 17)`),
 * which are what Android and iOS apps send: neither browsers nor, by themselves, bots (the engine
 * learns which of them an application's own users send, see core/scoring/request-evidence.ts).
 */
import UAParser from 'ua-parser-js';
import type { AppClient, ParsedUserAgent } from './types';
import { fifoMemo } from './memo';

/** Longest prefix inspected by the marker regexes (real UAs are far shorter). */
const MAX_SCAN = 2048;

/** Search engine, SEO, AI and link-preview crawlers. */
const CRAWLER_RE = new RegExp(
  [
    'googlebot',
    'google-inspectiontool',
    'googleother',
    'adsbot-google',
    'mediapartners-google',
    'apis-google',
    'storebot-google',
    'feedfetcher-google',
    'google-read-aloud',
    'google favicon',
    'bingbot',
    'bingpreview',
    'msnbot',
    'adidxbot',
    'yahoo! slurp',
    'duckduckbot',
    'duckassistbot',
    'baiduspider',
    'yandex\\w*bot',
    'exabot',
    'facebookexternalhit',
    'facebookcatalog',
    'facebot',
    'meta-externalagent',
    'ia_archiver',
    'archive\\.org_bot',
    'ahrefsbot',
    'ahrefssiteaudit',
    'semrushbot',
    'mj12bot',
    'dotbot',
    'rogerbot',
    'petalbot',
    'applebot',
    'twitterbot',
    'linkedinbot',
    'slackbot',
    'slack-imgproxy',
    'discordbot',
    'telegrambot',
    '^whatsapp/',
    'pinterestbot',
    '^pinterest/',
    'seznambot',
    'ccbot',
    'gptbot',
    'chatgpt-user',
    'oai-searchbot',
    'claudebot',
    'claude-web',
    'anthropic-ai',
    'perplexitybot',
    'bytespider',
    'amazonbot',
    'dataforseobot',
    'blexbot',
    'serpstatbot',
    'seokicks',
    'megaindex',
    'qwantify',
    'coccocbot',
    'mail\\.ru_bot',
    'naverbot',
    'yeti/',
    'daumoa',
    'screaming frog',
    'sitebulb',
    'siteauditbot',
    'barkrowler',
    'awariobot',
    'embedly',
    'quora link preview',
    'redditbot',
    'skypeuripreview',
    'vkshare',
    'bitlybot',
    'crawler',
    'spider',
    'crawl\\b',
    // Generic "SomethingBot/1.0" or "... bot;" — "Cubot" phones are stripped before this runs.
    '[a-z0-9_-]bot(?:[/\\s;),_-]|$)',
    '\\bbot\\b',
  ].join('|'),
  'i',
);

/** Headless or remote-controlled browsers. */
const HEADLESS_RE =
  /headlesschrome|\bheadless\b|phantomjs|slimerjs|puppeteer|playwright|selenium|webdriver|nightmare|htmlunit|jsdom|zombie\.js|prerender|rendertron|wkhtmltopdf/i;

/** HTTP libraries and CLI tools, matched at the start of the UA (where they put their product token). */
const SCRIPTED_PREFIX_RE = new RegExp(
  '^(?:' +
    [
      'curl/',
      'libcurl',
      'wget/',
      'python-requests',
      'python-urllib',
      'python-httpx',
      'python/',
      'aiohttp',
      'httpx/',
      'urllib3',
      'go-http-client',
      'go-resty',
      'java/',
      'java-http-client',
      'apache-httpclient',
      'apache-httpasyncclient',
      'jakarta commons-httpclient',
      'libwww-perl',
      'lwp::',
      'php/',
      'guzzlehttp',
      'node-fetch',
      'node\\.js',
      'node/',
      'axios/',
      'undici',
      'got ',
      'got/',
      'superagent',
      'request/',
      'ruby',
      'faraday',
      'http\\.rb',
      'rest-client',
      'httpie',
      'postmanruntime',
      'insomnia',
      'scrapy',
      'mechanize',
      'colly',
      'reqwest',
      'deno/',
      'bun/',
      'winhttp',
      'aria2',
      'httrack',
      'nutch',
      'nmap',
      'masscan',
      'zgrab',
      'nikto',
      'sqlmap',
      'wpscan',
      'fasthttp',
      'hackney',
      'mint/',
      'req/',
      'restsharp',
      'unirest',
      'k6/',
      'jmeter',
      'locust',
      'gatling',
      'headlesschrome',
    ].join('|') +
    ')',
  'i',
);

/** Automation markers that may appear anywhere in the UA. */
const SCRIPTED_ANYWHERE_RE =
  /scrapy|windowspowershell|python-requests|go-http-client|apache-httpclient|cypress|chrome-lighthouse|[(;\s]\+https?:\/\//i;

/** Operating systems that, with no device type from the parser, mean a desktop/laptop. */
const DESKTOP_OS_RE =
  /^(?:windows(?! (?:phone|mobile|ce))|mac os|macos|chrom(?:e|ium) os|linux|ubuntu|kubuntu|xubuntu|lubuntu|debian|fedora|mint|arch|gentoo|slackware|suse|opensuse|centos|red ?hat|mandriva|mageia|manjaro|deepin|elementary os|pclinuxos|zenwalk|raspbian|sabayon|linspire|linpus|vectorlinux|freebsd|openbsd|netbsd|dragonfly|pc-bsd|solaris|sunos|haiku|beos|os\/2|aix|hp-ux|unix|gnu|hurd|morphos|amigaos|serenityos|plan 9|minix|risc os|openvms)\b/i;

/** Handset operating systems, used when the parser found the OS but no device type. */
const MOBILE_OS_RE = /^(?:android|ios|ipados|harmonyos|kaios|windows (?:phone|mobile)|blackberry|symbian)\b/i;

/**
 * Native apps' HTTP stacks, by the product token each writes. OkHttp (Android, React Native on
 * Android), Dalvik (Android's HttpURLConnection), CFNetwork (iOS's URLSession, React Native on
 * iOS), Alamofire (iOS), Ktor (Kotlin Multiplatform), Dart (Flutter).
 */
const APP_LIBRARIES: readonly [RegExp, string][] = [
  [/\bokhttp\/v?([\w.+-]+)/i, 'okhttp'],
  [/^Dalvik\/([\w.]+)/i, 'Dalvik'],
  [/\bAlamofire\/([\w.]+)/i, 'Alamofire'],
  [/\bCFNetwork\/([\w.]+)/i, 'CFNetwork'],
  [/^Ktor(?:[ -]?client)?(?:\/([\w.]+))?(?:\s|$)/i, 'Ktor'],
  [/^Dart\/([\w.]+)/i, 'Dart'],
];
/** An app's own user agent: `Name/1.2 (…)` whose comment names a handset OS (`iOS 17.5`, `Android 14`, `iPhone`). */
const NATIVE_APP_RE = /^([A-Za-z][\w.+%-]*)\/v?([\w.+-]+)\s*\(([^)]*)\)/;
const HANDSET_COMMENT_RE = /\b(?:i(?:Pad)?OS|Android)\s*\d|\biPhone\b|\biPad\b/i;
/** Product tokens that are never an app's name. */
const NOT_APP_NAMES = /^(?:mozilla|okhttp|dalvik|cfnetwork|alamofire|ktor|dart|darwin)$/i;
/** iOS major version by Darwin major version (Apple's kernel numbering; iOS 26 follows iOS 18). */
const IOS_BY_DARWIN: Readonly<Record<number, number>> = {
  19: 13,
  20: 14,
  21: 15,
  22: 16,
  23: 17,
  24: 18,
  25: 26,
};

/** The native app client a user agent names, with what it says of the OS (null: not an app's HTTP stack). */
function appClientOf(ua: string): { app: AppClient; os: string | null; osVersion: string | null } | null {
  let library: string | null = null;
  let libraryVersion: string | null = null;
  for (const [re, name] of APP_LIBRARIES) {
    const m = re.exec(ua);
    if (m) {
      library = name;
      libraryVersion = m[1] ?? null;
      break;
    }
  }
  const own = NATIVE_APP_RE.exec(ua);
  const ownIsApp = own !== null && !NOT_APP_NAMES.test(own[1] ?? '') && HANDSET_COMMENT_RE.test(own[3] ?? '');
  if (library === null && !ownIsApp) return null;
  // The app's own product token, first in the string (`ShopApp/321 CFNetwork/…`), where there is one.
  const first = /^([A-Za-z][\w.+%-]*)\/v?([\w.+-]+)/.exec(ua);
  const named =
    first && !NOT_APP_NAMES.test(first[1] ?? '')
      ? { name: decodeName(first[1] ?? ''), version: first[2] ?? null }
      : null;
  let os: string | null = null;
  let osVersion: string | null = null;
  const darwin = /\bDarwin\/(\d+)/.exec(ua);
  if (darwin) {
    os = /Macintosh|Mac OS X|macOS/i.test(ua) ? 'Mac OS' : 'iOS';
    const ios = IOS_BY_DARWIN[Number(darwin[1])];
    if (os === 'iOS' && ios !== undefined) osVersion = String(ios);
  }
  const comment = /\b(iOS|iPadOS|Android)\s*([\d.]+)/i.exec(ua);
  if (comment) {
    os = /android/i.test(comment[1] ?? '') ? 'Android' : 'iOS';
    osVersion = comment[2] ?? null;
  }
  return {
    app: {
      library: library ?? 'native',
      name: named?.name ?? null,
      version: named?.version ?? libraryVersion,
    },
    os,
    osVersion,
  };
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name).slice(0, 64);
  } catch {
    return name.slice(0, 64);
  }
}

const UNKNOWN_BROWSER = 'Other';
const UNKNOWN_OS = 'Other';
const UNKNOWN_DEVICE = 'Unknown';

interface ClientName {
  name: string;
  version: string;
}

/** Best-effort client name for UAs ua-parser does not know (curl/8.4.0, "compatible; Googlebot/2.1"). */
function fallbackClient(ua: string): ClientName | null {
  const compatible = /compatible;\s*([A-Za-z][\w.!-]*(?: [A-Za-z][\w.-]*)?)\/v?([\w.]+)/.exec(ua);
  if (compatible) return { name: compatible[1], version: compatible[2] };
  const first = /^([A-Za-z][\w.+:-]*)\/v?([\w.+-]+)/.exec(ua);
  if (first && first[1].toLowerCase() !== 'mozilla') return { name: first[1], version: first[2] };
  return null;
}

function deviceType(parserType: string | undefined, osName: string): ParsedUserAgent['type'] {
  switch (parserType) {
    case 'tablet':
      return 'tablet';
    case 'mobile':
    case 'wearable':
      return 'mobile';
    case undefined:
    case '':
      if (DESKTOP_OS_RE.test(osName)) return 'desktop';
      // Native app clients ("MyApp/3.2 (Android 13) okhttp/4.9.2") name a mobile OS but no device.
      return MOBILE_OS_RE.test(osName) ? 'mobile' : 'other';
    default:
      return 'other'; // console, smarttv, embedded, xr
  }
}

function emptyResult(raw: string): ParsedUserAgent {
  return {
    raw,
    browser: UNKNOWN_BROWSER,
    version: '',
    os: UNKNOWN_OS,
    mobile: false,
    platform: UNKNOWN_OS,
    device: UNKNOWN_DEVICE,
    family: UNKNOWN_BROWSER,
    type: 'other',
    bot: false,
    headless: false,
    crawler: false,
  };
}

/** Recent results: a handful of user-agent strings make up most traffic, and parsing one costs ~40 us. */
const CACHE_SIZE = 5000;
const parseCached = fifoMemo(CACHE_SIZE, (input) => parseUncached(input));

/**
 * Parses a User-Agent header. Never throws; an empty string gives "Other"/"Unknown" placeholders.
 * - browser/family: browser name (or the client's product token for non-browsers, e.g. "curl");
 * - version: full browser version; os: "<name> <version>"; platform: OS name;
 * - device: "<vendor> <model>" or "Unknown"; mobile: type is mobile or tablet;
 * - bot is true for scripted clients and also for every headless browser and crawler.
 * Results are shared between callers: treat them as read-only.
 */
export function parseUserAgent(raw: string): ParsedUserAgent {
  return parseCached(typeof raw === 'string' ? raw : '');
}

function parseUncached(input: string): ParsedUserAgent {
  const ua = input.trim().slice(0, MAX_SCAN);
  if (ua.length === 0) return emptyResult(input);
  try {
    const r = new UAParser(ua).getResult();
    const app = r.browser.name ? null : appClientOf(ua);
    const osName = (r.os.name ?? app?.os ?? '').trim();
    const osVersion =
      r.os.version ??
      (app && (!r.os.name || r.os.name === app.os) ? (app.osVersion ?? undefined) : undefined);
    const os = `${osName} ${osVersion ?? ''}`.trim();
    let browser = (r.browser.name ?? '').trim();
    let version = (r.browser.version ?? '').trim();
    if (app) {
      browser = app.app.name ?? app.app.library;
      version = app.app.version ?? '';
    } else if (browser.length === 0) {
      const client = fallbackClient(ua);
      if (client) ({ name: browser, version } = client);
    }
    const device = `${r.device.vendor ?? ''} ${r.device.model ?? ''}`.trim();
    const type = deviceType(r.device.type, osName);
    const crawler = CRAWLER_RE.test(ua.replace(/cubot/gi, ''));
    const headless = HEADLESS_RE.test(ua);
    // A native app's HTTP stack is not a script by its user agent alone (the engine decides, from
    // what this application's own users send).
    const bot =
      crawler || headless || (!app && (SCRIPTED_PREFIX_RE.test(ua) || SCRIPTED_ANYWHERE_RE.test(ua)));
    return {
      raw: input,
      browser: browser || UNKNOWN_BROWSER,
      version,
      os: os || UNKNOWN_OS,
      mobile: type === 'mobile' || type === 'tablet',
      platform: osName || UNKNOWN_OS,
      device: device || UNKNOWN_DEVICE,
      family: browser || UNKNOWN_BROWSER,
      type,
      bot,
      headless,
      crawler,
      ...(app ? { app: app.app } : {}),
    };
  } catch {
    return emptyResult(input);
  }
}

export { castleUserAgent } from '../core/intel/types';
