/**
 * The state layer's bounded cache: it stays within its bound, keeps what is used, drops what is
 * not, and never drops an entry that is pinned (unwritten changes, a look-up under way).
 */
import { Generations } from '../../../src/store/state/generations';

interface Item {
  n: number;
  pinned: boolean;
}

const cache = (bound: number) => new Generations<Item>(bound, (v) => v.pinned);
const item = (n: number, pinned = false): Item => ({ n, pinned });

describe('Generations', () => {
  it('never holds more than its bound of unpinned entries', () => {
    const c = cache(100);
    // The largest size seen after any add (one expect for the lot: 10,000 of them take seconds).
    let most = 0;
    for (let i = 0; i < 10_000; i++) {
      c.add('s', `k${i}`, item(i));
      most = Math.max(most, c.size);
    }
    expect(most).toBeLessThanOrEqual(100);
    expect(most).toBeGreaterThan(0);
    expect(c.get('s', 'k9999')?.n).toBe(9999);
    expect(c.get('s', 'k0')).toBeUndefined();
  });

  it('keeps an entry that keeps being used, however much else passes through', () => {
    const c = cache(100);
    c.add('s', 'hot', item(-1));
    for (let i = 0; i < 5_000; i++) {
      c.add('s', `k${i}`, item(i));
      if (i % 40 === 0) expect(c.get('s', 'hot')?.n).toBe(-1);
    }
    expect(c.get('s', 'hot')?.n).toBe(-1);
  });

  it('drops an entry nobody used within a bound of newer ones', () => {
    const c = cache(10);
    c.add('s', 'old', item(0));
    for (let i = 0; i < 10; i++) c.add('s', `k${i}`, item(i));
    expect(c.peek('s', 'old')).toBeUndefined();
  });

  it('peek does not count as a use', () => {
    const c = cache(10);
    c.add('s', 'a', item(0));
    for (let i = 0; i < 5; i++) c.add('s', `k${i}`, item(i)); // rotation: 'a' is old now
    expect(c.peek('s', 'a')?.n).toBe(0);
    for (let i = 5; i < 10; i++) c.add('s', `k${i}`, item(i)); // next rotation drops the old generation
    expect(c.peek('s', 'a')).toBeUndefined();
  });

  it('never drops a pinned entry, and unpinned ones still go once it is released', () => {
    const c = cache(10);
    const pinned = item(0, true);
    c.add('s', 'p', pinned);
    for (let i = 0; i < 1_000; i++) c.add('s', `k${i}`, item(i));
    expect(c.peek('s', 'p')).toBe(pinned);
    pinned.pinned = false;
    for (let i = 1_000; i < 1_020; i++) c.add('s', `k${i}`, item(i));
    expect(c.peek('s', 'p')).toBeUndefined();
  });

  it('with many pinned entries, unpinned ones stay bounded (a long outage)', () => {
    const c = cache(10);
    for (let i = 0; i < 500; i++) c.add('s', `p${i}`, item(i, true));
    for (let i = 0; i < 1_000; i++) c.add('s', `k${i}`, item(i));
    const unpinned = [...c.entries()].map(([, k, v]) => [k, v] as const).filter(([, v]) => !v.pinned).length;
    expect([...c.entries()].map(([, k, v]) => [k, v] as const).filter(([, v]) => v.pinned)).toHaveLength(500);
    expect(unpinned).toBeLessThanOrEqual(10);
  });

  it('keeps the same key in two spaces apart, and lists a space alone', () => {
    const c = cache(10);
    c.add('s', 'k', item(1));
    c.add('t', 'k', item(2));
    expect(c.get('s', 'k')?.n).toBe(1);
    expect(c.get('t', 'k')?.n).toBe(2);
    expect(c.size).toBe(2);
    expect([...c.space('t')].map(([k, v]) => [k, v.n])).toEqual([['k', 2]]);
    c.delete('s', 'k');
    expect(c.peek('s', 'k')).toBeUndefined();
    expect(c.peek('t', 'k')?.n).toBe(2);
  });

  it('delete removes from either generation', () => {
    const c = cache(10);
    c.add('s', 'a', item(1));
    for (let i = 0; i < 5; i++) c.add('s', `k${i}`, item(i));
    c.add('s', 'b', item(2));
    c.delete('s', 'a');
    c.delete('s', 'b');
    expect(c.peek('s', 'a')).toBeUndefined();
    expect(c.peek('s', 'b')).toBeUndefined();
  });
});
