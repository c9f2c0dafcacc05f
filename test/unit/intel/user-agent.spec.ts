import { parseUserAgent, type ParsedUserAgent } from '../../../src/intel';

const CHROME_MAC =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const SAFARI_IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1';
const SAFARI_IPAD =
  'Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1';
const CHROME_ANDROID =
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.82 Mobile Safari/537.36';
const FIREFOX_WINDOWS = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0';
const HEADLESS =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.6099.71 Safari/537.36';
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
const GOOGLEBOT_SMARTPHONE =
  'Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.155 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
const HUMAN = { bot: false, headless: false, crawler: false };

const cases: Array<[string, string, Omit<ParsedUserAgent, 'raw'>]> = [
  [
    'Chrome on Mac',
    CHROME_MAC,
    {
      browser: 'Chrome',
      version: '124.0.0.0',
      os: 'Mac OS 10.15.7',
      mobile: false,
      platform: 'Mac OS',
      device: 'Apple Macintosh',
      family: 'Chrome',
      type: 'desktop',
      ...HUMAN,
    },
  ],
  [
    'Safari on iPhone',
    SAFARI_IPHONE,
    {
      browser: 'Mobile Safari',
      version: '17.4',
      os: 'iOS 17.4',
      mobile: true,
      platform: 'iOS',
      device: 'Apple iPhone',
      family: 'Mobile Safari',
      type: 'mobile',
      ...HUMAN,
    },
  ],
  [
    'Safari on iPad',
    SAFARI_IPAD,
    {
      browser: 'Mobile Safari',
      version: '16.6',
      os: 'iOS 16.6',
      mobile: true,
      platform: 'iOS',
      device: 'Apple iPad',
      family: 'Mobile Safari',
      type: 'tablet',
      ...HUMAN,
    },
  ],
  [
    'Chrome on Android',
    CHROME_ANDROID,
    {
      browser: 'Chrome',
      version: '124.0.6367.82',
      os: 'Android 14',
      mobile: true,
      platform: 'Android',
      device: 'Google Pixel 8',
      family: 'Chrome',
      type: 'mobile',
      ...HUMAN,
    },
  ],
  [
    'Firefox on Windows',
    FIREFOX_WINDOWS,
    {
      browser: 'Firefox',
      version: '125.0',
      os: 'Windows 10',
      mobile: false,
      platform: 'Windows',
      device: 'Unknown',
      family: 'Firefox',
      type: 'desktop',
      ...HUMAN,
    },
  ],
  [
    'HeadlessChrome',
    HEADLESS,
    {
      browser: 'Chrome Headless',
      version: '120.0.6099.71',
      os: 'Linux',
      mobile: false,
      platform: 'Linux',
      device: 'Unknown',
      family: 'Chrome Headless',
      type: 'desktop',
      bot: true,
      headless: true,
      crawler: false,
    },
  ],
  [
    'curl',
    'curl/8.4.0',
    {
      browser: 'curl',
      version: '8.4.0',
      os: 'Other',
      mobile: false,
      platform: 'Other',
      device: 'Unknown',
      family: 'curl',
      type: 'other',
      bot: true,
      headless: false,
      crawler: false,
    },
  ],
  [
    'python-requests',
    'python-requests/2.31.0',
    {
      browser: 'python-requests',
      version: '2.31.0',
      os: 'Other',
      mobile: false,
      platform: 'Other',
      device: 'Unknown',
      family: 'python-requests',
      type: 'other',
      bot: true,
      headless: false,
      crawler: false,
    },
  ],
  [
    'Googlebot',
    GOOGLEBOT,
    {
      browser: 'Googlebot',
      version: '2.1',
      os: 'Other',
      mobile: false,
      platform: 'Other',
      device: 'Unknown',
      family: 'Googlebot',
      type: 'other',
      bot: true,
      headless: false,
      crawler: true,
    },
  ],
  [
    'empty string',
    '',
    {
      browser: 'Other',
      version: '',
      os: 'Other',
      mobile: false,
      platform: 'Other',
      device: 'Unknown',
      family: 'Other',
      type: 'other',
      bot: false,
      headless: false,
      crawler: false,
    },
  ],
];

describe('parseUserAgent', () => {
  it.each(cases)('%s', (_name, ua, expected) => {
    expect(parseUserAgent(ua)).toEqual({ raw: ua, ...expected });
  });

  it('flags the smartphone Googlebot as a crawler while keeping the device data', () => {
    expect(parseUserAgent(GOOGLEBOT_SMARTPHONE)).toMatchObject({
      browser: 'Chrome',
      platform: 'Android',
      type: 'mobile',
      crawler: true,
      bot: true,
      headless: false,
    });
  });

  it.each([
    'Go-http-client/2.0',
    'Java/17.0.2',
    'Wget/1.21.4',
    'Apache-HttpClient/4.5.13 (Java/11.0.20)',
    'Scrapy/2.11.0 (+https://scrapy.org)',
    'axios/1.6.8',
    'node-fetch/1.0 (+https://github.com/bitinn/node-fetch)',
    'PostmanRuntime/7.37.0',
    'Mozilla/5.0 (Windows NT; Windows NT 10.0; en-US) WindowsPowerShell/5.1.22621.2506',
  ])('flags scripted client %j as bot (not crawler)', (ua) => {
    expect(parseUserAgent(ua)).toMatchObject({ bot: true, crawler: false });
  });

  it.each([
    'Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)',
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36',
    'Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)',
    'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)',
    'Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)',
  ])('flags crawler %j', (ua) => {
    expect(parseUserAgent(ua)).toMatchObject({ crawler: true, bot: true });
  });

  it('detects PhantomJS as headless', () => {
    const ua =
      'Mozilla/5.0 (Unknown; Linux x86_64) AppleWebKit/538.1 (KHTML, like Gecko) PhantomJS/2.1.1 Safari/538.1';
    expect(parseUserAgent(ua)).toMatchObject({ browser: 'PhantomJS', headless: true, bot: true });
  });

  // What native apps send: their HTTP stack, parsed into the app, its version and the OS where
  // the string says them; never a bot by the user agent alone (the engine learns which are the
  // application's own).
  it.each([
    [
      'okhttp/4.12.0',
      {
        browser: 'okhttp',
        version: '4.12.0',
        os: 'Other',
        type: 'other',
        app: { library: 'okhttp', name: null, version: '4.12.0' },
      },
    ],
    [
      'ShopApp/3.2.1 (Android 14; Pixel 8) okhttp/4.12.0',
      {
        browser: 'ShopApp',
        version: '3.2.1',
        os: 'Android 14',
        device: 'Google Pixel 8',
        type: 'mobile',
        app: { library: 'okhttp', name: 'ShopApp', version: '3.2.1' },
      },
    ],
    [
      'Dalvik/2.1.0 (Linux; U; Android 14; Pixel 8 Build/UQ1A.240205.004)',
      {
        browser: 'Dalvik',
        os: 'Android 14',
        device: 'Google Pixel 8',
        type: 'mobile',
        app: { library: 'Dalvik', name: null, version: '2.1.0' },
      },
    ],
    [
      'ShopApp/321 CFNetwork/1494.0.7 Darwin/23.4.0',
      {
        browser: 'ShopApp',
        version: '321',
        os: 'iOS 17',
        platform: 'iOS',
        type: 'mobile',
        app: { library: 'CFNetwork', name: 'ShopApp', version: '321' },
      },
    ],
    [
      'Shop%20App/98 CFNetwork/1568.100.1 Darwin/24.0.0',
      { browser: 'Shop App', os: 'iOS 18', app: { library: 'CFNetwork', name: 'Shop App', version: '98' } },
    ],
    [
      'ShopApp/3.2.1 (com.example.shop; build:321; iOS 17.5.0) Alamofire/5.8.0',
      {
        browser: 'ShopApp',
        os: 'iOS 17.5.0',
        type: 'mobile',
        app: { library: 'Alamofire', name: 'ShopApp', version: '3.2.1' },
      },
    ],
    [
      'ShopApp/1.2 (iPhone; iOS 17.5; Scale/3.00)',
      {
        browser: 'ShopApp',
        os: 'iOS 17.5',
        type: 'mobile',
        app: { library: 'native', name: 'ShopApp', version: '1.2' },
      },
    ],
    ['Ktor client', { browser: 'Ktor', type: 'other', app: { library: 'Ktor', name: null, version: null } }],
    [
      'Dart/3.3 (dart:io)',
      { browser: 'Dart', version: '3.3', app: { library: 'Dart', name: null, version: '3.3' } },
    ],
  ])('reads %j as a native app client, not a bot', (ua, expected) => {
    expect(parseUserAgent(ua)).toMatchObject({ ...expected, bot: false, headless: false, crawler: false });
  });

  it('keeps browsers, in-app web views and scripts out of the app clients', () => {
    const webview =
      'Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/UQ1A; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.0.0 Mobile Safari/537.36';
    expect(parseUserAgent(webview)).toMatchObject({ browser: 'Chrome WebView', bot: false });
    expect(parseUserAgent(webview).app).toBeUndefined();
    expect(parseUserAgent(SAFARI_IPHONE).app).toBeUndefined();
    for (const script of [
      'python-requests/2.31.0',
      'curl/8.4.0',
      'Java/17.0.9',
      'Go-http-client/1.1',
      'axios/1.6.7',
    ]) {
      expect(parseUserAgent(script).bot).toBe(true);
      expect(parseUserAgent(script).app).toBeUndefined();
    }
  });

  it('does not mistake a Cubot phone or an app using okhttp for a bot', () => {
    const cubot =
      'Mozilla/5.0 (Linux; Android 11; CUBOT X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36';
    expect(parseUserAgent(cubot)).toMatchObject({ type: 'mobile', bot: false, crawler: false });
    expect(parseUserAgent('MyApp/3.2 (Android 13) okhttp/4.9.2')).toMatchObject({
      bot: false,
      platform: 'Android',
      type: 'mobile',
    });
  });

  it('classifies Android tablets, Chrome OS and consoles', () => {
    const tab =
      'Mozilla/5.0 (Linux; Android 12; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
    expect(parseUserAgent(tab)).toMatchObject({ type: 'tablet', mobile: true, device: 'Samsung SM-X700' });
    const cros =
      'Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
    expect(parseUserAgent(cros)).toMatchObject({ type: 'desktop', platform: 'Chromium OS' });
    const ps5 =
      'Mozilla/5.0 (PlayStation; PlayStation 5/2.26) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.0 Safari/605.1.15';
    expect(parseUserAgent(ps5)).toMatchObject({ type: 'other', mobile: false });
  });

  it('never throws on odd input', () => {
    expect(() => parseUserAgent('\u0000\uffff'.repeat(10000))).not.toThrow();
    expect(parseUserAgent(undefined as unknown as string).raw).toBe('');
    expect(parseUserAgent('   ').browser).toBe('Other');
  });
});
