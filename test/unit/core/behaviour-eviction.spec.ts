/**
 * The eviction policy of a user's behavioural record (core/scoring/behaviour-eviction.ts): what a
 * change makes a full table, or the pending challenges, forget. Each case is one clause of the
 * rule; the record is given as the store holds it (stored keys, zero counts and all).
 */
import {
  planBehaviourEviction,
  type EvictionPlan,
  type StoredRecord,
  type StoredTable,
} from '../../../src/core/scoring/behaviour-eviction';
import {
  HOSTILE_CAP,
  PENDING_CAP,
  TABLE_CAPS,
  type BehaviourChange,
} from '../../../src/core/scoring/behaviour-tables';
import { LEVEL, LEVELS, type FeatureValues } from '../../../src/core/scoring/features';

const T = 1_700_000_000_000;
/** A table of `n` values `v0`…, counts 10, 11, … and last seen in the same order. */
const full = (
  n: number,
  entry: (k: number) => { c?: number; l?: number } = (k) => ({ c: 10 + k, l: T + k }),
): StoredTable => Object.fromEntries(Array.from({ length: n }, (_, k) => [`v${k}`, entry(k)]));
const legit = (values: Partial<FeatureValues>, weight = 1): BehaviourChange => ({
  legit: { values, weight, at: T, location: null },
});
const hostile = (values: Partial<FeatureValues>, weight = 1): BehaviourChange => ({
  hostile: { values, weight, at: T },
});
const pend = (id: string): BehaviourChange => ({
  pend: { id, challenge: { at: T, values: {}, tentative: 0 } },
});
const nothing: EvictionPlan = { legit: {}, hostile: {}, pending: null };

const cases: [string, StoredRecord | undefined, BehaviourChange, EvictionPlan][] = [
  ['no stored record: nothing to forget', undefined, legit({ ip: '1.2.3.4' }), nothing],
  [
    'a table with room keeps everything',
    { legit: { ip: full(TABLE_CAPS.ip - 1) } },
    legit({ ip: 'new' }),
    nothing,
  ],
  [
    'a full table forgets its least count for a new value',
    { legit: { ip: full(TABLE_CAPS.ip) } },
    legit({ ip: 'new' }),
    { ...nothing, legit: { ip: 'v0' } },
  ],
  ['a value already held never evicts', { legit: { ip: full(TABLE_CAPS.ip) } }, legit({ ip: 'v3' }), nothing],
  [
    'a value held with a zero count never evicts either',
    { legit: { fp: { y: { c: 0, l: T }, n: { c: 4, l: T } } } },
    legit({ fp: 'y' }),
    nothing,
  ],
  [
    'equal counts: the one last seen earliest goes',
    { legit: { fp: { y: { c: 2, l: T + 5 }, n: { c: 2, l: T + 1 } } } },
    legit({ fp: 'new' }),
    { ...nothing, legit: { fp: 'n' } },
  ],
  [
    'equal counts and times: the first stored goes',
    { legit: { fp: { y: { c: 2, l: T }, n: { c: 2, l: T } } } },
    legit({ fp: 'new' }),
    { ...nothing, legit: { fp: 'y' } },
  ],
  [
    'a zero count (decayed or taken back) takes a place and goes first',
    { legit: { fp: { y: { c: 3, l: T }, n: { c: 0, l: T + 9 } } } },
    legit({ fp: 'new' }),
    { ...nothing, legit: { fp: 'n' } },
  ],
  [
    'an entry without a count takes a place but is never chosen',
    { legit: { fp: { y: { l: T }, n: { c: 7, l: T } } } },
    legit({ fp: 'new' }),
    { ...nothing, legit: { fp: 'n' } },
  ],
  [
    'a take-back (negative weight) never evicts',
    { legit: { ip: full(TABLE_CAPS.ip) } },
    legit({ ip: 'new' }, -0.3),
    nothing,
  ],
  ['a zero weight never evicts', { legit: { ip: full(TABLE_CAPS.ip) } }, legit({ ip: 'new' }, 0), nothing],
  [
    'a level without a value is left alone',
    { legit: { ip: full(TABLE_CAPS.ip) } },
    legit({ ip: null, net: 'n1' }),
    nothing,
  ],
  [
    'each level has its own cap',
    { legit: { fp: full(TABLE_CAPS.fp), ip: full(TABLE_CAPS.fp) } },
    legit({ fp: 'new', ip: 'new' }),
    { ...nothing, legit: { fp: 'v0' } },
  ],
  [
    'every full level of one change forgets one value',
    { legit: { [LEVEL.operator]: full(TABLE_CAPS.asn), [LEVEL.placeInOperator]: full(TABLE_CAPS.ap) } },
    legit({ asn: 'AS1', ap: 'AS1|FR|Paris' }),
    { ...nothing, legit: { asn: 'v0', ap: 'v0' } },
  ],
  [
    'the hostile record caps at HOSTILE_CAP',
    { hostile: { ip: full(HOSTILE_CAP) } },
    hostile({ ip: 'new' }),
    { ...nothing, hostile: { ip: 'v0' } },
  ],
  [
    'the hostile record with room keeps everything',
    { hostile: { ip: full(HOSTILE_CAP - 1) } },
    hostile({ ip: 'new' }),
    nothing,
  ],
  [
    'the hostile record keeps only its levels',
    { hostile: { ip: full(HOSTILE_CAP) } },
    hostile({ lang: 'fr', ip: null }),
    nothing,
  ],
  [
    'an addition to one record does not touch the other',
    { legit: { ip: full(HOSTILE_CAP) }, hostile: { ip: full(HOSTILE_CAP) } },
    hostile({ ip: 'new' }),
    { ...nothing, hostile: { ip: 'v0' } },
  ],
  [
    'pending challenges at the cap: the oldest goes',
    {
      pending: Object.fromEntries(
        Array.from({ length: PENDING_CAP }, (_, k) => [`ev${k}`, { at: T + (k === 2 ? -1 : k) }]),
      ),
    },
    pend('next'),
    { ...nothing, pending: 'ev2' },
  ],
  [
    'pending challenges below the cap: none goes',
    {
      pending: Object.fromEntries(
        Array.from({ length: PENDING_CAP - 1 }, (_, k) => [`ev${k}`, { at: T + k }]),
      ),
    },
    pend('next'),
    nothing,
  ],
  [
    'a pending challenge stored without a time counts as the oldest',
    {
      pending: Object.fromEntries(
        Array.from({ length: PENDING_CAP }, (_, k) => [`ev${k}`, k === 3 ? {} : { at: T + k }]),
      ),
    },
    pend('next'),
    { ...nothing, pending: 'ev3' },
  ],
  [
    'no new challenge: full pending stays',
    { pending: Object.fromEntries(Array.from({ length: PENDING_CAP }, (_, k) => [`ev${k}`, { at: T + k }])) },
    legit({}),
    nothing,
  ],
];

describe('planBehaviourEviction', () => {
  it.each(cases)('%s', (_name, known, change, expected) => {
    expect(planBehaviourEviction(known, change)).toEqual(expected);
  });

  it('compares values with the stored keys the store gives it', () => {
    const escape = (v: string) => v.replace(/\./g, '%2E');
    const table = { ...full(TABLE_CAPS.ip - 1), '1%2E2%2E3%2E4': { c: 50, l: T } };
    expect(planBehaviourEviction({ legit: { ip: table } }, legit({ ip: '1.2.3.4' }), escape)).toEqual(
      nothing,
    );
    expect(planBehaviourEviction({ legit: { ip: table } }, legit({ ip: '5.6.7.8' }), escape)).toEqual({
      ...nothing,
      legit: { ip: 'v0' },
    });
  });

  it('plans for both records and the pending challenges of one change at once', () => {
    const known: StoredRecord = {
      legit: { ip: full(TABLE_CAPS.ip) },
      hostile: { dev: full(HOSTILE_CAP) },
      pending: Object.fromEntries(Array.from({ length: PENDING_CAP }, (_, k) => [`ev${k}`, { at: T + k }])),
    };
    const change: BehaviourChange = { ...legit({ ip: 'new' }), ...hostile({ dev: 'new' }), ...pend('next') };
    expect(planBehaviourEviction(known, change)).toEqual({
      legit: { ip: 'v0' },
      hostile: { dev: 'v0' },
      pending: 'ev0',
    });
  });
});

describe('level names', () => {
  it('name every stored level code once', () => {
    const codes = Object.values(LEVEL);
    expect(new Set(codes).size).toBe(codes.length);
    expect([...codes].sort()).toEqual([...LEVELS].sort());
  });
});
