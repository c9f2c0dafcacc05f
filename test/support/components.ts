/** What the browser script collects on one ordinary laptop (Chrome on a Mac): the client tests' fixture. */
export const LAPTOP_UA =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

export const laptopComponents = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  userAgent: LAPTOP_UA,
  languages: ['en-GB', 'en'],
  timezone: 'Europe/London',
  platform: 'MacIntel',
  screen: { width: 1512, height: 982, depth: 30, pixelRatio: 2 },
  cores: 10,
  memory: 8,
  touchPoints: 0,
  canvas: 'c1a2b3',
  audio: '124.04347527516074',
  webgl: {
    vendor: 'Google Inc. (Apple)',
    renderer: 'ANGLE (Apple, ANGLE Metal Renderer: Apple M1 Pro, Unspecified Version)',
  },
  fonts: ['Arial', 'Helvetica Neue', 'Menlo'],
  automation: [],
  ...over,
});
