/**
 * Castle's legacy (1.x) front-end names, backed by Rampart's tokens (docs/client.md, "Castle's
 * front-end names"): a global `_castle` (calls queued in `_castle.q` before the script ran are run
 * then), whose `getClientId` answers the current token at once; the `__cid` cookie and every
 * `castle_client_id` field hold it. A token serves one login flow: once handed out (by getClientId
 * or a form's submit) it is replaced by a fresh one, as it is a minute before it expires, and when
 * the page comes back from the back-forward cache.
 */
import type { Collector, Minted } from './collector';
import { PUBLISHABLE_KEY } from './options';
import { attempt, setField } from './util';

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

type Held = Minted & { handedOut: boolean };

export class CastleNames {
  private exposed: { cookieDomain: string | null } | null = null;
  private held: Held | null = null;
  private renewing: Promise<void> | null = null;
  private renewTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly heldBack = new WeakSet<HTMLFormElement>();

  /**
   * `collector` mints the tokens; `changeKey` takes a publishable key a `_castle` command named
   * (configure again, with the endpoint in force); `createRequestToken` answers `_castle('createRequestToken')`.
   */
  constructor(
    private readonly collector: Collector,
    private readonly changeKey: (key: string) => void,
    private readonly createRequestToken: () => Promise<string>,
  ) {}

  /** Start Castle's names (after `configure`); a second call only changes the cookie's domain. */
  expose(o: CastleNamesOptions = {}): void {
    if (!this.collector.options) throw new Error('Rampart: call configure() first');
    const first = this.exposed === null;
    this.exposed = { cookieDomain: o.cookieDomain ?? null };
    if (!first) return;
    const w = window as unknown as { _castle?: unknown };
    const queued = typeof w._castle === 'function' ? (w._castle as { q?: unknown }).q : undefined;
    w._castle = (command?: unknown, ...args: unknown[]) => this.command(command, ...args);
    if (Array.isArray(queued))
      for (const args of queued)
        attempt(
          () => this.command(...(Array.from(args as ArrayLike<unknown>) as [unknown, ...unknown[]])),
          undefined,
        );
    document.addEventListener('submit', (e) => this.onSubmit(e), true);
    window.addEventListener('pageshow', (e) => {
      if (e.persisted) void this.renew();
    });
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible' && !this.usable()) void this.renew();
    });
    void this.renew();
  }

  /** The current token, at once (empty before the first one arrived); handing it out starts its flow. */
  getClientId(): string {
    const h = this.usable();
    if (!h) {
      void this.renew();
      return '';
    }
    this.handOut(h);
    return h.token;
  }

  /** `_castle(command, …args)`: the commands a page written for Castle's web client calls. */
  private command(command?: unknown, ...args: unknown[]): unknown {
    switch (command) {
      case 'getClientId':
        return this.getClientId();
      case 'createRequestToken':
        return this.createRequestToken();
      case 'setAppId':
      case 'setPublishableKey':
      case 'configure': {
        // Castle's app id means nothing here: only a publishable key (`pk_…`) changes the key.
        const key = keyOf(args[0]);
        if (key !== null && key !== this.collector.options?.publishableKey) {
          this.changeKey(key);
          this.held = null;
          void this.renew();
        }
        return undefined;
      }
      default:
        // identify, track, page, trackPageview, setUserId, secure…: Castle's own analytics, nothing to do here.
        return undefined;
    }
  }

  /** The held token while it is good for a flow (not within GRACE_MS of its expiry). */
  private usable(): Held | null {
    return this.held && this.held.expiresAt - Date.now() > GRACE_MS ? this.held : null;
  }

  private handOut(h: Held): void {
    // The cookie says what this page hands out (another tab of the site may have written its own).
    this.writeCookie(h);
    if (h.handedOut) return;
    h.handedOut = true;
    // The next flow gets a token of its own; this one stays current until that one arrives.
    setTimeout(() => void this.renew(), 0);
  }

  /** Fetch a fresh token into the cookie and the fields (one fetch at a time). */
  private renew(): Promise<void> {
    this.renewing ??= this.collector
      .mint(true)
      .then(
        (m) => {
          const held = { ...m, handedOut: false };
          this.held = held;
          this.writeCookie(held);
          for (const input of Array.from(document.querySelectorAll('input')))
            if (input.name === CID_FIELD) input.value = m.token;
          this.schedule(Math.max(5000, m.expiresAt - Date.now() - RENEW_BEFORE_MS));
        },
        () => this.schedule(30_000),
      )
      .finally(() => {
        this.renewing = null;
      });
    return this.renewing;
  }

  private schedule(ms: number): void {
    clearTimeout(this.renewTimer);
    this.renewTimer = setTimeout(() => void this.renew(), ms);
  }

  private writeCookie(m: Minted): void {
    const maxAge = Math.max(0, Math.floor((m.expiresAt - Date.now()) / 1000));
    const secure = location.protocol === 'https:' ? '; Secure' : '';
    const domain = this.exposed?.cookieDomain ? `; Domain=${this.exposed.cookieDomain}` : '';
    // A `__cid` left by Castle's own script (a long-lived id, perhaps on a parent domain) would be
    // read before ours: expired wherever it may have been set.
    if (
      document.cookie
        .split(/;\s*/)
        .some((c) => c.startsWith(`${CID_COOKIE}=`) && !c.startsWith(`${CID_COOKIE}=rpt1.`))
    ) {
      const labels = location.hostname.split('.');
      document.cookie = `${CID_COOKIE}=; Path=/; Max-Age=0`;
      for (let i = 0; i < labels.length - 1; i++)
        document.cookie = `${CID_COOKIE}=; Path=/; Max-Age=0; Domain=${labels.slice(i).join('.')}`;
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
  private onSubmit(e: Event): void {
    const form = e.target;
    if (
      !(form instanceof HTMLFormElement) ||
      !Array.from(form.querySelectorAll('input')).some((i) => i.name === CID_FIELD || i.type === 'password')
    )
      return;
    const h = this.usable();
    if (!h) {
      if (this.heldBack.has(form)) {
        this.heldBack.delete(form);
        return;
      }
      this.heldBack.add(form);
      e.preventDefault();
      e.stopImmediatePropagation();
      const submitter = (e as SubmitEvent).submitter;
      const again = () => {
        if (typeof form.requestSubmit === 'function')
          form.requestSubmit(
            submitter instanceof HTMLElement && (submitter as HTMLButtonElement).form === form
              ? submitter
              : undefined,
          );
        else {
          this.heldBack.delete(form);
          const next = this.usable();
          if (next) setField(form, CID_FIELD, next.token);
          form.submit();
        }
      };
      void Promise.race([this.renew(), new Promise((r) => setTimeout(r, SUBMIT_WAIT_MS))]).then(again);
      return;
    }
    this.heldBack.delete(form);
    setField(form, CID_FIELD, h.token);
    this.handOut(h);
  }
}

/** The publishable key a `_castle` command's argument names (a string, or `{pk}`), or null. */
function keyOf(value: unknown): string | null {
  const key = typeof value === 'string' ? value : (value as { pk?: unknown } | undefined)?.pk;
  return typeof key === 'string' && PUBLISHABLE_KEY.test(key) ? key : null;
}

/** The key Castle's snippet queued before the script ran: `_castle('setPublishableKey', 'pk_…')` (or `setAppId`, `configure`). */
export function keyFromQueue(): string | null {
  const stub = (window as unknown as { _castle?: unknown })._castle;
  const queued = typeof stub === 'function' ? (stub as { q?: unknown }).q : undefined;
  if (!Array.isArray(queued)) return null;
  for (const args of queued) {
    const [command, value] = Array.from(args as ArrayLike<unknown>);
    const key = keyOf(value);
    if (
      (command === 'setPublishableKey' || command === 'setAppId' || command === 'configure') &&
      key !== null
    )
      return key;
  }
  return null;
}
