/**
 * The trailers of a failed TrackStream (src/grpc/accepted-ranges.ts): what the server writes for
 * the events it wrote, and what the client reads back, for the patterns a stream can end with.
 */
import { acceptedOf, acceptedTrailers, MAX_ACCEPTED_RANGES_CHARS } from '../../../src/grpc/accepted-ranges';

const bits = (s: string) => [...s].map((c) => c === '1');

describe('TrackStream accepted trailers', () => {
  it.each([
    ['nothing read', '', 0, ''],
    ['every event written', '1111', 4, '0-3'],
    ['none written', '0000', 0, ''],
    ['the first ones', '1100', 2, '0-1'],
    ['holes: a late event left later ones written', '1101001', 2, '0-1,3-3,6-6'],
    ['the first one late', '0111', 0, '1-3'],
  ])('%s: %s', (_name, pattern, first, ranges) => {
    const written = bits(pattern);
    expect(acceptedTrailers(written)).toEqual({ first, ranges });
    // Read back by the client: exactly the events written.
    expect(acceptedOf(String(first), ranges, written.length)).toEqual(written);
  });

  it('cuts the ranges at their bound: an event past it reads as not written', () => {
    const written = Array.from({ length: 4_000 }, (_, i) => i % 2 === 0);
    const { first, ranges } = acceptedTrailers(written);
    expect(first).toBe(1);
    expect(ranges.length).toBeLessThanOrEqual(MAX_ACCEPTED_RANGES_CHARS);
    const read = acceptedOf(String(first), ranges, written.length) as boolean[];
    const listed = read.lastIndexOf(true);
    expect(listed).toBeGreaterThan(500);
    expect(read.slice(0, listed + 1)).toEqual(written.slice(0, listed + 1));
    expect(read.slice(listed + 1).every((w) => !w)).toBe(true);
  });

  it.each([
    ['no count', undefined, '0-3', null],
    ['a count that is not one', '-1', '0-3', null],
    ['a count that is not a number', 'x', '0-3', null],
    ['no ranges (an older server): its first events', '2', undefined, [true, true, false, false]],
    ['ranges that cannot be read: its first events', '2', '0-1;3-3', [true, true, false, false]],
    ['ranges overlapping: its first events', '2', '0-2,1-3', [true, true, false, false]],
    ['ranges backwards: its first events', '2', '3-1', [true, true, false, false]],
    ['ranges past what was sent: its first events', '2', '0-4', [true, true, false, false]],
  ])('reads %s', (_name, first, ranges, expected) => {
    expect(acceptedOf(first, ranges, 4)).toEqual(expected);
  });
});
