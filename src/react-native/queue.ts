/**
 * The event queue: bounded, oldest dropped first, mirrored to the app's storage so that events
 * survive a restart (an `app_closed` is often the last thing an app does before it is killed).
 * It knows nothing of when or how events are sent: flusher.ts decides that.
 *
 * An event keeps the device time it happened at and the clock offset known then; when no session
 * had given an offset yet (an install is queued before the first registration answers), the
 * offset known when it is sent is used, so every timestamp goes out in Rampart's clock.
 */
import type { KeyValueStorage } from './platform';
import type { AppEventType, EventProperties } from './wire';

export interface QueuedEvent {
  /** Unique within the queue: events leave it by id, since it may shift while a batch is out. */
  id: number;
  type: AppEventType;
  name?: string;
  user_id?: string;
  user_signature?: string;
  user_jwt?: string;
  properties?: EventProperties;
  /** Device time, ms since the epoch. */
  at: number;
  /** Server time minus device time when queued, or null when not yet known. */
  offset: number | null;
}

export type NewEvent = Omit<QueuedEvent, 'id'>;

const isQueued = (e: unknown): e is QueuedEvent => {
  const o = e as QueuedEvent;
  return (
    typeof o === 'object' &&
    o !== null &&
    Number.isInteger(o.id) &&
    typeof o.type === 'string' &&
    typeof o.at === 'number' &&
    (o.offset === null || typeof o.offset === 'number')
  );
};

export class EventQueue {
  private events: QueuedEvent[] = [];
  private nextId = 1;
  private writing: Promise<void> = Promise.resolve();
  /** A write queued but not started yet. */
  private waiting: Promise<void> | null = null;
  /**
   * Each queued event's JSON, made once: a write joins them (what JSON.stringify of the array
   * makes), so that a full queue is not serialised again, event by event, for every event added.
   * Queued events are never changed (a change replaces the object).
   */
  private readonly json = new WeakMap<QueuedEvent, string>();

  constructor(
    private readonly storage: KeyValueStorage,
    private readonly key: string,
    private readonly max: number,
    private readonly log: (message: string) => void,
  ) {}

  /** Reads what an earlier run left; events queued before this resolves stay behind the stored ones. */
  async load(): Promise<void> {
    let stored: QueuedEvent[] = [];
    try {
      const raw = await this.storage.getItem(this.key);
      const parsed: unknown = raw ? JSON.parse(raw) : [];
      if (Array.isArray(parsed)) stored = parsed.filter(isQueued);
    } catch {
      this.log('the stored queue could not be read; starting empty');
    }
    const offsetIds = stored.reduce((m, e) => Math.max(m, e.id), 0);
    // Renumber what was queued meanwhile so that ids stay unique.
    const fresh = this.events.map((e, i) => ({ ...e, id: offsetIds + i + 1 }));
    this.events = [...stored, ...fresh];
    this.nextId = offsetIds + fresh.length + 1;
    this.trim();
    if (fresh.length > 0) await this.persist();
  }

  size(): number {
    return this.events.length;
  }

  push(event: NewEvent): void {
    this.events.push({ ...event, id: this.nextId++ });
    this.trim();
    void this.persist();
  }

  /** The oldest `n` events (not removed: they leave only when the server took them). */
  peek(n: number): QueuedEvent[] {
    return this.events.slice(0, n);
  }

  remove(ids: ReadonlySet<number>): void {
    const before = this.events.length;
    this.events = this.events.filter((e) => !ids.has(e.id));
    if (this.events.length !== before) void this.persist();
  }

  /**
   * Resolves once storage holds the queue as it is now. Writes run one at a time, and each
   * writes the state of the moment it starts, so changes made while one write is waiting to
   * start share it: a burst of events costs one or two writes, not one per event.
   */
  persist(): Promise<void> {
    if (this.waiting) return this.waiting;
    const write = this.writing.then(async () => {
      this.waiting = null;
      try {
        await this.storage.setItem(this.key, `[${this.events.map((e) => this.jsonOf(e)).join(',')}]`);
      } catch {
        this.log('the queue could not be stored');
      }
    });
    this.waiting = write;
    this.writing = write;
    return write;
  }

  private jsonOf(e: QueuedEvent): string {
    let text = this.json.get(e);
    if (text === undefined) this.json.set(e, (text = JSON.stringify(e)));
    return text;
  }

  private trim(): void {
    const over = this.events.length - this.max;
    if (over > 0) {
      this.events.splice(0, over);
      this.log(`dropped the ${over} oldest event(s): the queue is over its limit of ${this.max}`);
    }
  }
}
