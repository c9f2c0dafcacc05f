/**
 * The browser client's wire format: the components the script (src/browser/rampart.ts) sends the
 * collector, as the collector validates them (core/client/components.ts). Types only, with no
 * imports, so that the browser build can use them too.
 */
export interface Components {
  /** `navigator.userAgent`, as the browser reports it. */
  userAgent: string;
  languages: string[];
  timezone: string | null;
  /** `new Date().getTimezoneOffset()`: minutes from local time to UTC. */
  timezoneOffset: number | null;
  platform: string | null;
  screen: { width: number; height: number; depth: number; pixelRatio: number } | null;
  cores: number | null;
  memory: number | null;
  touchPoints: number | null;
  /** Hashes the script computed from a drawing and a sound it rendered. */
  canvas: string | null;
  audio: string | null;
  webgl: { vendor: string; renderer: string } | null;
  fonts: string[];
  /** A random id the script keeps in the profile's storage for the site (two profiles of one machine differ). */
  profile: string | null;
  /** Automation and tampering evidence (see AUTOMATION). */
  automation: string[];
}
