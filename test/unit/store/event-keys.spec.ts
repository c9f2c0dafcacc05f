/**
 * The event keys' batch (src/store/event-keys.ts) hands its documents over in turns: every value
 * and minute in exactly one of SHARDS turns, the turns of about the same size, and an event of a
 * value whose document was just taken starts a new document instead of joining the one gone.
 */
import type { EnvId } from '../../../src/core/model';
import { EventKeyBatch, SHARDS, type EventKeyDoc } from '../../../src/store/event-keys';
import { storedEvent } from '../../support/events';

const ENV = 'env_keys' as EnvId;
const AT = Date.parse('2026-11-29T10:00:00Z');

/** An event of country `cc` at `at`, named by nothing else but its event name and verdict. */
const event = (id: string, cc: string, at = AT) =>
  storedEvent({ id, envId: ENV, occurredAt: new Date(at), country: cc, action: 'allow' });

/** Every event id of `docs`, by key. */
function idsByKey(docs: readonly EventKeyDoc[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const d of docs) out.set(d.k, [...(out.get(d.k) ?? []), ...d.ids]);
  for (const ids of out.values()) ids.sort();
  return out;
}

/** 1,000 countries (made-up codes), two events each. */
const events = Array.from({ length: 2_000 }, (_, i) => event(`e${i}`, `c${i % 1_000}`, AT + i));

it('hands every document over in exactly one turn, the turns about equal', () => {
  const whole = new EventKeyBatch('t');
  const turns = new EventKeyBatch('t');
  for (const e of events) {
    expect(whole.add(e)).toEqual([]);
    turns.add(e);
  }
  const all = whole.take();
  expect(whole.size).toBe(0);
  const taken: EventKeyDoc[][] = [];
  for (let turn = 0; turn < SHARDS; turn++) taken.push(turns.take(turn));
  expect(turns.size).toBe(0);
  expect(idsByKey(taken.flat())).toEqual(idsByKey(all));
  // No key in two turns; each turn a fifth of the countries, give or take.
  const keysOf = (docs: EventKeyDoc[]) => new Set(docs.map((d) => d.k));
  const countries = taken.map((docs) => [...keysOf(docs)].filter((k) => k.includes(':country:')).length);
  expect(countries.reduce((a, b) => a + b, 0)).toBe(1_000);
  for (const n of countries) expect(n).toBeGreaterThan(150);
  for (const n of countries) expect(n).toBeLessThan(250);
});

it('starts a new document for an event of a value whose document was taken', () => {
  const batch = new EventKeyBatch('t');
  batch.add(event('a', 'GB'));
  const turn = [...Array(SHARDS).keys()].find((t) => {
    const probe = new EventKeyBatch('p');
    probe.add(event('a', 'GB'));
    return probe.take(t).some((d) => d.k.endsWith(':country:GB'));
  }) as number;
  const first = batch.take(turn).filter((d) => d.k.endsWith(':country:GB'));
  expect(first.map((d) => d.ids)).toEqual([['a']]);
  // The next event of the same minute: not in the document taken, but in one of its own.
  batch.add(event('b', 'GB', AT + 1));
  expect(first.map((d) => d.ids)).toEqual([['a']]);
  const second = batch.take(turn).filter((d) => d.k.endsWith(':country:GB'));
  expect(second.map((d) => d.ids)).toEqual([['b']]);
  expect(second.map((d) => d.at)).toEqual([[AT + 1]]);
  expect(second[0]?._id).not.toBe(first[0]?._id);
  // Other turns hold nothing of it.
  for (let t = 0; t < SHARDS; t++)
    if (t !== turn) expect(batch.take(t).some((d) => d.k.endsWith(':country:GB'))).toBe(false);
});
