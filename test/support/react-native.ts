/**
 * What a phone keeps and does, for tests of @rampart/react-native (the unit tier's fake platform
 * and the end-to-end test against the real service): its storage, and an app state the test
 * moves by hand.
 */
import type { AppStateStatus, KeyValueStorage } from '../../src/react-native/platform';

/** Storage in memory; `failing` makes it throw, `writes` counts writes per key. */
export class MemoryStorage implements KeyValueStorage {
  readonly data = new Map<string, string>();
  failing = false;
  async getItem(key: string): Promise<string | null> {
    if (this.failing) throw new Error('storage down');
    return this.data.get(key) ?? null;
  }
  readonly writes = new Map<string, number>();
  async setItem(key: string, value: string): Promise<void> {
    if (this.failing) throw new Error('storage down');
    this.writes.set(key, (this.writes.get(key) ?? 0) + 1);
    this.data.set(key, value);
  }
  async removeItem(key: string): Promise<void> {
    this.data.delete(key);
  }
}

/** The app in the foreground or not, as the test says (`emit`). */
export class FakeAppState {
  state: AppStateStatus = 'active';
  private listeners = new Set<(s: AppStateStatus) => void>();
  current = (): AppStateStatus => this.state;
  subscribe = (l: (s: AppStateStatus) => void): (() => void) => {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  };
  emit(s: AppStateStatus): void {
    this.state = s;
    for (const l of this.listeners) l(s);
  }
  get listenerCount(): number {
    return this.listeners.size;
  }
}
