/**
 * The collector's client (docs/client.md, "The flow"): the device's components, a proof of work
 * solved in the background from `configure` on, and a request token asked for with both. One
 * Collector per page; its state (the key, the components read once, the proof being prepared, the
 * latest token) lives in the instance.
 */
import type { Components } from '../core/client/wire';
import type { PageWatch } from './behaviour';
import { automation, collect } from './components';
import type { CollectorOptions } from './options';
import { proveWork } from './pow';

export type { CollectorOptions } from './options';

/** A token and when it stops being accepted (this page's clock), and when it was had. */
export interface Minted {
  token: string;
  expiresAt: number;
  mintedAt: number;
}

/** A challenge answered, ready for the next token. */
interface Proof {
  challenge: string;
  nonce: string;
  expiresAt: number;
}

/** The collector's answer to a call that failed: its status, and the fields it named. */
type Answer = { token?: string; expires_in?: number; message?: string; fields?: { field?: unknown }[] };

export class Collector {
  private opts: CollectorOptions | null = null;
  private stable: Promise<Components> | null = null;
  private prepared: Promise<Proof | null> | null = null;
  private latest: Minted | null = null;

  constructor(private readonly watch: PageWatch) {}

  /** The options in force (null before `configure`). */
  get options(): CollectorOptions | null {
    return this.opts;
  }

  /** Take the key and the endpoint, and start on the first token's proof of work at once, while the page's user reads and types. */
  configure(o: CollectorOptions): void {
    this.opts = o;
    this.latest = null;
    this.prepared = null;
    void this.prepare();
  }

  /** The last token this page was given, if any (what the page's events are sent with). */
  get last(): Minted | null {
    return this.latest;
  }

  /** A fresh token for one login or sign-up (valid five minutes, for one flow); `ahead` when no request needs it yet. */
  async mint(ahead = false): Promise<Minted> {
    const o = this.opts;
    if (!o) throw new Error('Rampart: call configure() first');
    this.stable ??= collect(o.storageKey);
    const components = await this.stable;
    const send = async (proof: Proof | null) => {
      // The automation evidence is read again each time: a driver can attach after the page loaded.
      const body = {
        publishable_key: o.publishableKey,
        components: { ...components, automation: automation() },
        ...(proof ? { proof: { challenge: proof.challenge, nonce: proof.nonce } } : {}),
        behaviour: this.watch.report(ahead),
      };
      const res = await this.post('/v1/client/token', body);
      return { res, answer: (await res.json()) as Answer };
    };
    const refused = (a: Answer) =>
      Array.isArray(a.fields) &&
      a.fields.some((f) => typeof f?.field === 'string' && f.field.startsWith('proof'));
    let proof = await this.takeProof();
    let { res, answer } = await send(proof);
    // A proof refused (a challenge that expired while the laptop slept): once more with a fresh one, then without.
    for (let again = 0; res.status === 422 && proof && refused(answer) && again < 2; again++) {
      proof = again === 0 ? await this.takeProof() : null;
      ({ res, answer } = await send(proof));
    }
    if (!res.ok || typeof answer.token !== 'string')
      throw new Error(`Rampart: ${answer.message ?? `collector answered ${res.status}`}`);
    const ttl = typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in : 300;
    const now = Date.now();
    const minted = { token: answer.token, expiresAt: now + ttl * 1000, mintedAt: now };
    if (this.opts === o) this.latest = minted;
    return minted;
  }

  /**
   * POST a JSON body to Rampart as `text/plain` (a simple cross-origin request: no preflight), no
   * cookies, given up after the configured timeout.
   */
  async post(path: string, body: unknown): Promise<Response> {
    const o = this.opts;
    if (!o) throw new Error('Rampart: call configure() first');
    const abort =
      typeof AbortController === 'function' && o.timeoutMs !== null ? new AbortController() : null;
    const timer = abort ? setTimeout(() => abort.abort(), o.timeoutMs ?? 0) : undefined;
    try {
      return await fetch(`${o.endpoint}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify(body),
        credentials: 'omit',
        mode: 'cors',
        ...(abort ? { signal: abort.signal } : {}),
      });
    } finally {
      clearTimeout(timer);
    }
  }

  /** Ask the collector for a challenge and answer it, in the background (null: none to be had, e.g. an older Rampart). */
  private prepare(): Promise<Proof | null> {
    this.prepared ??= (async (): Promise<Proof | null> => {
      const o = this.opts;
      if (!o) return null;
      const res = await this.post('/v1/client/challenge', { publishable_key: o.publishableKey });
      if (!res.ok) return null;
      const c = (await res.json()) as {
        challenge?: unknown;
        salt?: unknown;
        difficulty?: unknown;
        expires_in?: unknown;
      };
      if (typeof c.challenge !== 'string' || typeof c.salt !== 'string' || typeof c.difficulty !== 'number')
        return null;
      const expiresAt = Date.now() + (typeof c.expires_in === 'number' ? c.expires_in : 300) * 1000;
      return { challenge: c.challenge, nonce: await proveWork(c.salt, c.difficulty), expiresAt };
    })().catch(() => null);
    return this.prepared;
  }

  /** The prepared proof, taken (a challenge answers one token), or a fresh one when it is too close to expiring. */
  private async takeProof(): Promise<Proof | null> {
    const mine = this.prepare();
    this.prepared = null;
    const p = await mine;
    if (p && p.expiresAt - Date.now() > 15_000) return p;
    const fresh = this.prepare();
    this.prepared = null;
    return fresh;
  }
}
