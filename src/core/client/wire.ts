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

/** How the page's password field came to hold its value, as far as the page saw. */
export type PasswordEntry = 'typed' | 'pasted' | 'filled' | 'empty' | 'absent';

/** What the page reports of itself before it asks for a token (the collector's `behaviour`: core/client/proof.ts). Counts only. */
export interface Behaviour {
  /** Milliseconds from the page's start (navigation) to the request for the token. */
  elapsedMs: number;
  /** Key presses, pointer presses (mouse, touch, pen), pastes and input events on the page (trusted events only). */
  keys: number;
  pointer: number;
  pastes: number;
  inputs: number;
  /** typed (key input), pasted, filled (a value without either: a password manager, autofill, or a script), empty, absent (no password field). */
  password: PasswordEntry;
  /** The token was asked for ahead of any request (Castle's names keep one ready), not for a submit or a call. */
  ahead: boolean;
}
