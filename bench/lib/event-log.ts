/**
 * What the store's derived writers (src/store/rollups.ts, src/store/event-keys.ts) read of an
 * event, kept compactly (~42 bytes an event, typed arrays) so that a bulk load that generates events
 * in any order can hand them to the writers afterwards in time order, as the live path does.
 *
 * Kept: id, time received and of the event, name, endpoint, verdict, signals, policy, country,
 * ASN and IPv4 address. Left out (empty in `event(i)`): user, e-mail, device, user agent, risk,
 * context, traits, properties: the writers read none of them (`keysOfEvent` is checked against the
 * originals on the way in; the rollups count time, verdict, signals, address, ASN and country).
 */
import type { Action, EnvId, Endpoint, PolicyRef, StoredEvent } from '../../src/core/model';
import { keysOfEvent } from '../../src/store/event-keys';

const MINUTE = 60_000;

/** Values by small number; 0 is null. */
class Table<T> {
  private readonly index = new Map<string, number>();
  readonly values: (T | null)[] = [null];
  constructor(private readonly key: (v: T) => string) {}
  of(v: T | null): number {
    if (v === null) return 0;
    const k = this.key(v);
    let n = this.index.get(k);
    if (n === undefined) {
      n = this.values.length;
      if (n > 0xffff) throw new Error('EventLog: more than 65,535 distinct values in a column');
      this.values.push(v);
      this.index.set(k, n);
    }
    return n;
  }
  at(n: number): T | null {
    return this.values[n] ?? null;
  }
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function packIp(ip: string | null): number {
  if (ip === null) return 0;
  const m = IPV4.exec(ip);
  const n = m ? ((Number(m[1]) << 24) | (Number(m[2]) << 16) | (Number(m[3]) << 8) | Number(m[4])) >>> 0 : 0;
  if (n === 0) throw new Error(`EventLog: not a non-zero IPv4 address: ${ip}`);
  return n;
}

const unpackIp = (n: number): string | null =>
  n === 0 ? null : `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;

export class EventLog {
  private n = 0;
  private readonly ids: Uint8Array;
  private readonly at: Float64Array;
  /** receivedAt - occurredAt (ms). */
  private readonly lag: Uint16Array;
  private readonly cols: Record<
    'name' | 'endpoint' | 'action' | 'signals' | 'policy' | 'country' | 'asn',
    Uint16Array
  >;
  private readonly ip: Uint32Array;
  private readonly names = new Table<string>((v) => v);
  private readonly endpoints = new Table<Endpoint>((v) => v);
  private readonly actions = new Table<Action>((v) => v);
  private readonly signalSets = new Table<string[]>((v) => v.join('\n'));
  private readonly policies = new Table<PolicyRef>((v) => JSON.stringify(v));
  private readonly countries = new Table<string>((v) => v);
  private readonly asns = new Table<number>((v) => String(v));
  /** Earliest and newest event time (ms). */
  earliest = Infinity;
  newest = -Infinity;

  constructor(
    readonly capacity: number,
    private readonly envId: EnvId,
  ) {
    this.ids = new Uint8Array(capacity * 16);
    this.at = new Float64Array(capacity);
    this.lag = new Uint16Array(capacity);
    this.cols = {
      name: new Uint16Array(capacity),
      endpoint: new Uint16Array(capacity),
      action: new Uint16Array(capacity),
      signals: new Uint16Array(capacity),
      policy: new Uint16Array(capacity),
      country: new Uint16Array(capacity),
      asn: new Uint16Array(capacity),
    };
    this.ip = new Uint32Array(capacity);
  }

  get size(): number {
    return this.n;
  }

  add(e: StoredEvent): void {
    if (e.envId !== this.envId) throw new Error('EventLog: one environment only');
    if (this.n >= this.capacity) throw new Error(`EventLog: more than ${this.capacity} events`);
    const i = this.n++;
    const hex = e.id.replaceAll('-', '');
    if (!/^[0-9a-f]{32}$/.test(hex)) throw new Error(`EventLog: not a UUID: ${e.id}`);
    this.ids.set(Buffer.from(hex, 'hex'), i * 16);
    const at = e.occurredAt.getTime();
    this.at[i] = at;
    const lag = e.receivedAt.getTime() - at;
    if (lag < 0 || lag > 0xffff) throw new Error(`EventLog: received ${lag} ms after it occurred`);
    this.lag[i] = lag;
    this.cols.name[i] = this.names.of(e.name);
    this.cols.endpoint[i] = this.endpoints.of(e.endpoint);
    this.cols.action[i] = this.actions.of(e.action);
    this.cols.signals[i] = this.signalSets.of(e.signals);
    this.cols.policy[i] = this.policies.of(e.policy);
    this.cols.country[i] = this.countries.of(e.country);
    this.cols.asn[i] = this.asns.of(e.asn);
    this.ip[i] = packIp(e.ip);
    this.earliest = Math.min(this.earliest, at);
    this.newest = Math.max(this.newest, at);
    // What the log gives back must have the original's keys (a new key dimension would show here).
    if (i < 1000 && JSON.stringify(keysOfEvent(this.event(i))) !== JSON.stringify(keysOfEvent(e)))
      throw new Error('EventLog: the event keys of a logged event differ from the original');
  }

  /** The event as the writers read it; the fields the log does not keep are empty. */
  event(i: number): StoredEvent {
    const id = Buffer.from(this.ids.buffer, this.ids.byteOffset + i * 16, 16).toString('hex');
    const at = this.at[i];
    const ip = unpackIp(this.ip[i]);
    return {
      id: `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`,
      envId: this.envId,
      name: this.names.at(this.cols.name[i]) ?? '',
      endpoint: this.endpoints.at(this.cols.endpoint[i]) ?? 'track',
      userId: null,
      email: null,
      deviceToken: null,
      ip,
      country: this.countries.at(this.cols.country[i]),
      asn: this.asns.at(this.cols.asn[i]),
      userAgent: '',
      action: this.actions.at(this.cols.action[i]),
      risk: null,
      signals: [...(this.signalSets.at(this.cols.signals[i]) ?? [])],
      signalDetails: {},
      policy: this.policies.at(this.cols.policy[i]),
      context: { ip, headers: {}, userAgent: '', fingerprint: null, extra: {} },
      userTraits: {},
      properties: {},
      occurredAt: new Date(at),
      receivedAt: new Date(at + this.lag[i]),
      degraded: false,
    };
  }

  /** The events' indexes ordered by the minute they occurred in (a counting sort; within a minute, as added). */
  byMinute(): Uint32Array {
    const first = Math.floor(this.earliest / MINUTE);
    const bucketOf = (i: number) => Math.floor(this.at[i] / MINUTE) - first;
    // starts[b + 1] counts bucket b's events, then starts[b] is where bucket b begins.
    const starts = new Uint32Array(Math.floor(this.newest / MINUTE) - first + 2);
    for (let i = 0; i < this.n; i++) starts[bucketOf(i) + 1]++;
    for (let b = 1; b < starts.length; b++) starts[b] += starts[b - 1];
    const order = new Uint32Array(this.n);
    for (let i = 0; i < this.n; i++) order[starts[bucketOf(i)]++] = i;
    return order;
  }
}
