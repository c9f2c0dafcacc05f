/**
 * A Bloom filter of strings: `has` may answer true for a string never added (at ~2.7% when it
 * holds one string per 16 of its bits, with its 3 probes), never false for one added. Its users
 * (created-here.ts, state/known-ids.ts) ask it whether a document can exist, so a false positive
 * only costs the database look-up that would have been made anyway.
 */

const PROBES = 3;

/**
 * The two hashes `hash` made last, as 32-bit signed integers (small integers to V8: no number
 * object, and no pair, made per call: a verdict hashes dozens of ids). A probe's bit, taken
 * modulo a power of two, is the same as from their unsigned values.
 */
let H1 = 0;
let H2 = 0;

/** Two 32-bit hashes of a string (FNV-1a, each finished with a different mix): into H1 and H2. */
function hash(s: string): void {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  let a = h ^ (h >>> 16);
  a = Math.imul(a, 0x85ebca6b);
  a ^= a >>> 13;
  let b = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
  b ^= b >>> 12;
  b = Math.imul(b, 0x297a2d39);
  b ^= b >>> 15;
  // An odd step visits distinct bits for every probe.
  H1 = a | 0;
  H2 = b | 1;
}

export class Bloom {
  private readonly words: Uint32Array;
  private readonly mask: number;

  /** `bits`: a power of two, at least 32 (4 MB holds 2 million strings at ~2.7%). */
  constructor(readonly bits: number) {
    Bloom.check(bits);
    this.words = new Uint32Array(bits / 32);
    this.mask = bits - 1;
  }

  /** Throws unless `bits` is a power of two of at least 32. */
  static check(bits: number): void {
    if (!Number.isInteger(Math.log2(bits)) || bits < 32)
      throw new Error('bits must be a power of two of at least 32');
  }

  /** The bits a filter needs to hold `n` strings at ~2.7% false positives (a power of two). */
  static bitsFor(n: number): number {
    return 2 ** Math.max(5, Math.ceil(Math.log2(Math.max(1, n) * 16)));
  }

  /** Add `s`; true when it was not there before (no probe's bit was set). */
  add(s: string): boolean {
    hash(s);
    const h1 = H1;
    const h2 = H2;
    let added = false;
    for (let i = 0; i < PROBES; i++) {
      const bit = (h1 + i * h2) & this.mask;
      const word = bit >>> 5;
      const was = this.words[word] ?? 0;
      const set = was | (1 << (bit & 31));
      if (set !== was) {
        this.words[word] = set;
        added = true;
      }
    }
    return added;
  }

  /** Whether `s` may have been added (false: it never was). */
  has(s: string): boolean {
    hash(s);
    const h1 = H1;
    const h2 = H2;
    for (let i = 0; i < PROBES; i++) {
      const bit = (h1 + i * h2) & this.mask;
      if (((this.words[bit >>> 5] ?? 0) & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}
