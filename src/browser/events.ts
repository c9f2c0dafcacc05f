/**
 * Client-side events (castle-js 2.x's `page`, `form` and `custom`): sent to Rampart's events
 * endpoint (`POST /v1/client/events`, docs/client.md "Client-side events") with the page's
 * publishable key and a request token this page was given, which names the device. Each call is
 * one request; its promise answers as castle-js's does: true once Rampart accepted the event,
 * false when it refused it (or the page is not configured, or the event is not one to send),
 * null when Rampart could not be reached in time.
 */
import type { Collector } from './collector';

/** What castle-js 2.x calls a user: `id` is required; only `id` and `signature` leave the page. */
export interface UserParams {
  id: string;
  email?: string;
  phone?: string;
  registered_at?: string;
  name?: string;
  traits?: Record<string, unknown>;
  address?: Record<string, unknown>;
  /** Hex HMAC-SHA256 of `id` under the environment's API secret, computed by the application's backend. */
  signature?: string;
}

export interface PageParams {
  user?: UserParams;
  userJwt?: string;
  /** Default: the document's title. */
  name?: string;
  /** Default: this page's address (its query and fragment are never sent). */
  url?: string;
  /** Default: `document.referrer` (likewise without query and fragment). */
  referrer?: string;
}

export interface FormParams {
  user?: UserParams;
  userJwt?: string;
  name: string;
  values?: Record<string, string>;
}

export interface CustomParams {
  user?: UserParams;
  userJwt?: string;
  name: string;
  properties?: Record<string, string | number | boolean>;
}

/** One event as the endpoint takes it (core/client/events.ts). */
export interface WireEvent {
  type: 'page' | 'form' | 'custom';
  timestamp: string;
  name?: string;
  url?: string;
  referrer?: string;
  properties?: Record<string, string | number | boolean>;
  user_id?: string;
  user_signature?: string;
  user_jwt?: string;
}

/** The endpoint's bounds (core/client/events.ts): longer strings are cut, extra members left out, here rather than refused there. */
const MAX_NAME = 128;
const MAX_URL = 2048;
const MAX_PROPERTY = 256;
const MAX_PROPERTIES = 20;
const MAX_JWT = 4096;
/** How long a token is reused for events before the page asks for another (Rampart takes one for an hour from its issue). */
const EVENTS_TOKEN_REUSE_MS = 50 * 60_000;

/** An address without its query and fragment (a reset link's token stays in the page), cut to the bound; null when it is not one. */
export function bareUrl(value: unknown): string | null {
  if (typeof value !== 'string' || value === '') return null;
  try {
    const u = new URL(value, location.href);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
    return `${u.origin}${u.pathname}`.slice(0, MAX_URL);
  } catch {
    return null;
  }
}

const text = (value: unknown, max: number): string | undefined =>
  typeof value === 'string' && value !== '' ? value.slice(0, max) : undefined;

/** At most MAX_PROPERTIES members of strings (cut), finite numbers and booleans; others left out. */
function properties(value: unknown): Record<string, string | number | boolean> | undefined {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const out: Record<string, string | number | boolean> = {};
  let n = 0;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (n >= MAX_PROPERTIES) break;
    const key = k.slice(0, 64);
    if (typeof v === 'string') out[key] = v.slice(0, MAX_PROPERTY);
    else if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean') out[key] = v;
    else continue;
    n++;
  }
  return n > 0 ? out : undefined;
}

/** The user members an event carries: the id (and its signature), or the backend's JWT. */
function who(user: unknown, jwt: unknown): Pick<WireEvent, 'user_id' | 'user_signature' | 'user_jwt'> {
  const out: Pick<WireEvent, 'user_id' | 'user_signature' | 'user_jwt'> = {};
  if (typeof jwt === 'string' && jwt.length > 0 && jwt.length <= MAX_JWT) out.user_jwt = jwt;
  const u = user as Partial<UserParams> | null | undefined;
  const id = u && typeof u === 'object' ? (typeof u.id === 'number' ? String(u.id) : u.id) : undefined;
  if (typeof id === 'string' && id !== '') {
    out.user_id = id.slice(0, MAX_NAME);
    if (typeof u?.signature === 'string' && /^[0-9a-fA-F]{64}$/.test(u.signature))
      out.user_signature = u.signature;
  }
  return out;
}

/** The wire form of a castle-js event call (null: nothing to send, e.g. a form or custom event without a name). */
export function wireEvent(
  type: WireEvent['type'],
  params: unknown,
  defaults: { user: UserParams | null; userJwt: string | null },
): WireEvent | null {
  const p = (params && typeof params === 'object' ? params : {}) as Record<string, unknown>;
  // The event's own user, else the one set for events that name none (user / userJwt).
  const own = p.user !== undefined || p.userJwt !== undefined;
  const base = {
    type,
    timestamp: new Date().toISOString(),
    ...(own ? who(p.user, p.userJwt) : who(defaults.user, defaults.userJwt)),
  };
  if (type === 'page') {
    const name = text(p.name, MAX_NAME) ?? text(document.title, MAX_NAME);
    const url = bareUrl(p.url ?? location.href);
    const referrer = bareUrl(p.referrer ?? document.referrer);
    return { ...base, ...(name ? { name } : {}), ...(url ? { url } : {}), ...(referrer ? { referrer } : {}) };
  }
  const name = text(p.name, MAX_NAME);
  if (!name) return null;
  const props = properties(type === 'form' ? p.values : p.properties);
  return { ...base, name, ...(props ? { properties: props } : {}) };
}

export class EventSender {
  constructor(private readonly collector: Collector) {}

  /** Send one event; true: accepted, false: refused (or not configured), null: Rampart not reached in time. */
  async send(event: WireEvent): Promise<boolean | null> {
    const o = this.collector.options;
    if (!o) return false;
    let token: string;
    try {
      token = await this.token();
    } catch {
      return null;
    }
    try {
      const res = await this.collector.post('/v1/client/events', {
        publishable_key: o.publishableKey,
        request_token: token,
        events: [event],
      });
      return res.status === 202;
    } catch {
      return null;
    }
  }

  /** A token this page was given within the last EVENTS_TOKEN_REUSE_MS (events do not use a token up), or a fresh one. */
  private async token(): Promise<string> {
    const last = this.collector.last;
    if (last && Date.now() - last.mintedAt < EVENTS_TOKEN_REUSE_MS) return last.token;
    return (await this.collector.mint(true)).token;
  }
}
