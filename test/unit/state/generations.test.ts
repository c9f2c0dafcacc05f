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
    for (let i = 0; i < 10_000; i++) {
      c.add(`k${i}`, item(i));
      expect(c.size).toBeLessThanOrEqual(100);
    }
    expect(c.get('k9999')?.n).toBe(9999);
    expect(c.get('k0')).toBeUndefined();
  });

  it('keeps an entry that keeps being used, however much else passes through', () => {
    const c = cache(100);
    c.add('hot', item(-1));
    for (let i = 0; i < 5_000; i++) {
      c.add(`k${i}`, item(i));
      if (i % 40 === 0) expect(c.get('hot')?.n).toBe(-1);
    }
    expect(c.get('hot')?.n).toBe(-1);
  });

  it('drops an entry nobody used within a bound of newer ones', () => {
    const c = cache(10);
    c.add('old', item(0));
    for (let i = 0; i < 10; i++) c.add(`k${i}`, item(i));
    expect(c.peek('old')).toBeUndefined();
  });

  it('peek does not count as a use', () => {
    const c = cache(10);
    c.add('a', item(0));
    for (let i = 0; i < 5; i++) c.add(`k${i}`, item(i)); // rotation: 'a' is old now
    expect(c.peek('a')?.n).toBe(0);
    for (let i = 5; i < 10; i++) c.add(`k${i}`, item(i)); // next rotation drops the old generation
    expect(c.peek('a')).toBeUndefined();
  });

  it('never drops a pinned entry, and unpinned ones still go once it is released', () => {
    const c = cache(10);
    const pinned = item(0, true);
    c.add('p', pinned);
    for (let i = 0; i < 1_000; i++) c.add(`k${i}`, item(i));
    expect(c.peek('p')).toBe(pinned);
    pinned.pinned = false;
    for (let i = 1_000; i < 1_020; i++) c.add(`k${i}`, item(i));
    expect(c.peek('p')).toBeUndefined();
  });

  it('with many pinned entries, unpinned ones stay bounded (a long outage)', () => {
    const c = cache(10);
    for (let i = 0; i < 500; i++) c.add(`p${i}`, item(i, true));
    for (let i = 0; i < 1_000; i++) c.add(`k${i}`, item(i));
    const unpinned = [...c.pairs()].filter(([, v]) => !v.pinned).length;
    expect([...c.pairs()].filter(([, v]) => v.pinned)).toHaveLength(500);
    expect(unpinned).toBeLessThanOrEqual(10);
  });

  it('delete removes from either generation', () => {
    const c = cache(10);
    c.add('a', item(1));
    for (let i = 0; i < 5; i++) c.add(`k${i}`, item(i));
    c.add('b', item(2));
    c.delete('a');
    c.delete('b');
    expect(c.peek('a')).toBeUndefined();
    expect(c.peek('b')).toBeUndefined();
  });
});
