/**
 * Which window documents can exist without this process having written them (created-here.ts):
 * before the horizon anything may; after it, only what was noted. The filter forgets old buckets
 * by making them unknown again, never by calling a written document absent.
 */
import { CreatedHere } from '../../../src/store/created-here';
import { firstHourOf, windowHorizon } from '../../../src/core/scoring/counters';

const HOUR = 3_600_000;

describe('firstHourOf', () => {
  it.each([
    ['w:ip:81.2.69.1:498801', 498801],
    ['w:ip:2001:db8::1:498801', 498801],
    ['w:net:81.2.69.0/24:498802', 498802],
    ['w:day:*:20783', 20783 * 24],
    ['p:asn:AS3320', null],
    ['e:abc', null],
    ['t:jti-1', null],
    ['w:ip:81.2.69.1:x', null],
  ])('%s → %p', (key, hour) => {
    expect(firstHourOf(key)).toBe(hour);
  });
});

describe('windowHorizon', () => {
  it('covers event times up to five minutes ahead of the clock, and earlier clocks ten minutes ahead', () => {
    const start = Date.parse('2026-11-26T10:00:00Z');
    expect(windowHorizon(start)).toBe(Math.floor(start / HOUR));
    // 10:46: an event stamped 10:51 by a clock 10 minutes ahead is in the 11:00 hour.
    expect(windowHorizon(start + 46 * 60_000)).toBe(Math.floor(start / HOUR) + 1);
    expect(windowHorizon(start + 44 * 60_000)).toBe(Math.floor(start / HOUR));
  });
});

describe('CreatedHere', () => {
  const made = (horizon: number, buckets = 3) =>
    new CreatedHere(horizon, firstHourOf, { buckets, bits: 1 << 12 });

  it('calls nothing absent at or before the horizon', () => {
    const c = made(100);
    expect(c.absent('w:ip:1.2.3.4:100', 'e:w:ip:1.2.3.4:100')).toBe(false);
    expect(c.absent('w:ip:1.2.3.4:99', 'e:w:ip:1.2.3.4:99')).toBe(false);
    // A day that began before the horizon may hold documents written before.
    expect(c.absent('w:day:*:4', 'e:w:day:*:4')).toBe(false);
  });

  it('calls a window after the horizon absent until it is noted', () => {
    const c = made(100);
    expect(c.absent('w:ip:1.2.3.4:101', 'e:w:ip:1.2.3.4:101')).toBe(true);
    c.note('w:ip:1.2.3.4:101', 'e:w:ip:1.2.3.4:101');
    expect(c.absent('w:ip:1.2.3.4:101', 'e:w:ip:1.2.3.4:101')).toBe(false);
    // Another environment's document of the same key, and another address, are still absent.
    expect(c.absent('w:ip:1.2.3.4:101', 'f:w:ip:1.2.3.4:101')).toBe(true);
    expect(c.absent('w:ip:1.2.3.5:101', 'e:w:ip:1.2.3.5:101')).toBe(true);
  });

  it('never calls a document without a bucket absent', () => {
    const c = made(Number.NEGATIVE_INFINITY);
    for (const key of ['p:asn:AS1', 'e:abc', 't:jti', 'i:device', 'h:Chrome'])
      expect(c.absent(key, `e:${key}`)).toBe(false);
  });

  it('on a new database, calls every unwritten window absent', () => {
    const c = made(Number.NEGATIVE_INFINITY);
    expect(c.absent('w:ip:1.2.3.4:5', 'e:w:ip:1.2.3.4:5')).toBe(true);
    expect(c.absent('w:day:*:0', 'e:w:day:*:0')).toBe(true);
  });

  it('makes the oldest bucket unknown (looked up) when it drops its filter, never absent', () => {
    const c = made(100, 3);
    for (const b of [101, 102, 103]) c.note(`w:ip:1.2.3.4:${b}`, `e:${b}`);
    expect(c.tracked).toEqual([101, 102, 103]);
    c.note('w:ip:1.2.3.4:104', 'e:104');
    expect(c.tracked).toEqual([102, 103, 104]);
    // 101 held a document: after its filter went, it is no longer called absent.
    expect(c.absent('w:ip:1.2.3.4:101', 'e:101')).toBe(false);
    expect(c.absent('w:ip:9.9.9.9:101', 'e:x101')).toBe(false);
    // A late event's bucket older than every filter kept is unknown too, and not tracked.
    c.note('w:ip:1.2.3.4:101', 'e:101b');
    expect(c.tracked).toEqual([102, 103, 104]);
    expect(c.absent('w:ip:1.2.3.4:101', 'e:101b')).toBe(false);
    // The kept buckets still answer.
    expect(c.absent('w:ip:1.2.3.4:103', 'e:103')).toBe(false);
    expect(c.absent('w:ip:9.9.9.9:103', 'e:x103')).toBe(true);
  });

  it('never calls a noted document absent, however many are noted (false positives only cost a look-up)', () => {
    const c = made(Number.NEGATIVE_INFINITY);
    const ids = Array.from({ length: 2_000 }, (_, i) => `env:w:ip:10.0.${i >> 8}.${i & 255}:7`);
    for (const id of ids) c.note('w:ip:x:7', id);
    expect(ids.filter((id) => c.absent('w:ip:x:7', id))).toEqual([]);
    // 4,096 bits for 2,000 ids is far over capacity: most others are "maybe written" then.
    const others = Array.from({ length: 1_000 }, (_, i) => `env:w:ip:172.16.${i >> 8}.${i & 255}:7`);
    expect(others.filter((id) => c.absent('w:ip:x:7', id)).length).toBeLessThan(1_000);
  });

  it('refuses a filter size that is not a power of two', () => {
    expect(() => new CreatedHere(0, firstHourOf, { bits: 1000 })).toThrow(/power of two/);
  });
});
