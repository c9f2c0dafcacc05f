/**
 * The Bloom filter behind created-here.ts and state/known-ids.ts: never a false negative, false
 * positives near the rate its size promises, and a size it refuses.
 */
import { Bloom } from '../../../src/store/bloom';

describe('Bloom', () => {
  it('has every string added, and says whether an add changed it', () => {
    const b = new Bloom(Bloom.bitsFor(10_000));
    let changed = 0;
    for (let i = 0; i < 10_000; i++) if (b.add(`env:user-${i}`)) changed++;
    for (let i = 0; i < 10_000; i++) expect(b.has(`env:user-${i}`)).toBe(true);
    // A new string whose bits were all set already (a false positive) changes nothing.
    expect(changed).toBeGreaterThan(9_800);
    expect(b.add('env:user-7')).toBe(false);
  });

  it('answers false for strings never added, but for ~2.7% at its sized load', () => {
    const b = new Bloom(Bloom.bitsFor(20_000));
    for (let i = 0; i < 20_000; i++) b.add(`env:e%3A${i.toString(16)}`);
    let positives = 0;
    for (let i = 0; i < 20_000; i++) if (b.has(`env:e%3Aother-${i}`)) positives++;
    expect(positives / 20_000).toBeLessThan(0.04);
    expect(new Bloom(1024).has('anything')).toBe(false);
  });

  it.each([
    [0, 'none'],
    [16, 'below 32'],
    [1000, 'not a power of two'],
  ])('refuses %d bits (%s)', (bits) => {
    expect(() => new Bloom(bits)).toThrow('bits must be a power of two of at least 32');
  });

  it('sizes a filter at 16 bits per string, as a power of two', () => {
    expect(Bloom.bitsFor(0)).toBe(32);
    expect(Bloom.bitsFor(1000)).toBe(16_384);
    expect(Bloom.bitsFor(1024)).toBe(16_384);
    expect(Bloom.bitsFor(1025)).toBe(32_768);
  });
});
