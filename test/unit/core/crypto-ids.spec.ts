/**
 * Event ids are UUIDv7 (RFC 9562): a valid UUID of version 7 and variant 10, the time in its first
 * 48 bits, ordered as text by the time they were made, and still mostly random.
 */
import { timeOrderedUuid } from '../../../src/core/crypto';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

it('is a version 7 UUID carrying the time in milliseconds', () => {
  const at = Date.parse('2026-11-26T10:00:00.123Z');
  const id = timeOrderedUuid(at);
  expect(id).toMatch(UUID_V7);
  expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
});

it('sorts as text in the order of the times it was made with, whatever its random bits', () => {
  const times = Array.from({ length: 200 }, (_, i) => 1_700_000_000_000 + i * 7);
  const ids = times.map((t) => timeOrderedUuid(t));
  expect([...ids].sort()).toEqual(ids);
});

it('differs between ids of the same millisecond', () => {
  const ids = new Set(Array.from({ length: 1000 }, () => timeOrderedUuid(1_700_000_000_000)));
  expect(ids.size).toBe(1000);
});
