/**
 * The delta engine: MongoDB's update semantics applied in memory, coalescing that never changes
 * the outcome, and the update documents sent to the database.
 */
import {
  applyDelta,
  coalesce,
  delta,
  Edit,
  fieldName,
  fromFieldName,
  replacement,
  toKeyed,
  toUpdateDocument,
  type Doc,
  type KeyedPaths,
  type OpEntry,
} from '../../../src/store/state/delta';

const at = (s: string) => new Date(`2026-01-01T${s}:00.000Z`);

/** A randomised round's document, named by the round and the document it started from. */
interface Outcome {
  round: number;
  from: 'missing' | 'existing';
  doc: Doc | null;
}
const outcome = (round: number, start: Doc | null, doc: Doc | null): Outcome => ({
  round,
  from: start === null ? 'missing' : 'existing',
  doc,
});

describe('applyDelta (MongoDB upsert semantics, in memory)', () => {
  const cases: { name: string; doc: Doc | null; d: ReturnType<typeof delta>; want: Doc }[] = [
    {
      name: 'inc on a missing field starts at 0',
      doc: {},
      d: delta().inc(['c', 'n'], 2),
      want: { c: { n: 2 } },
    },
    { name: 'inc adds', doc: { c: { n: 3 } }, d: delta().inc(['c', 'n'], -1), want: { c: { n: 2 } } },
    {
      name: 'max keeps the later date',
      doc: { t: at('10:00') },
      d: delta().max(['t'], at('09:00')),
      want: { t: at('10:00') },
    },
    {
      name: 'max replaces an earlier date',
      doc: { t: at('10:00') },
      d: delta().max(['t'], at('11:00')),
      want: { t: at('11:00') },
    },
    { name: 'min keeps the earlier string', doc: { s: 'b' }, d: delta().min(['s'], 'c'), want: { s: 'b' } },
    { name: 'min on a missing field sets it', doc: {}, d: delta().min(['s'], 'c'), want: { s: 'c' } },
    {
      name: 'addToSet skips members already there',
      doc: { s: ['a'] },
      d: delta().addToSet(['s'], 'a', 'b'),
      want: { s: ['a', 'b'] },
    },
    {
      name: 'set creates intermediate objects',
      doc: {},
      d: delta().set(['a', 'b', 'c'], 1),
      want: { a: { b: { c: 1 } } },
    },
    {
      name: 'unset removes, and a missing path is fine',
      doc: { a: { b: 1, c: 2 } },
      d: delta().unset(['a', 'b']).unset(['x', 'y']),
      want: { a: { c: 2 } },
    },
    {
      name: 'setOnInsert applies when the document is inserted',
      doc: null,
      d: delta().setOnInsert(['created'], 1).inc(['n'], 1),
      want: { created: 1, n: 1 },
    },
    {
      name: 'setOnInsert does nothing on an existing document',
      doc: { n: 1 },
      d: delta().setOnInsert(['created'], 1),
      want: { n: 1 },
    },
  ];
  it.each(cases)('$name', ({ doc, d, want }) => {
    expect(applyDelta(doc, d)).toEqual(want);
  });

  it("copies values, so a later change to the caller's object does not leak into the document", () => {
    const ctx = { ip: '1.2.3.4' };
    const doc = applyDelta({}, delta().set(['ctx'], ctx));
    ctx.ip = 'changed';
    expect(doc).toEqual({ ctx: { ip: '1.2.3.4' } });
  });

  it("adds to a set in place, and never makes the delta's own array the document's", () => {
    const doc: Doc = { s: ['a'] };
    const kept = doc.s;
    applyDelta(doc, delta().addToSet(['s'], 'a', 'b'));
    expect(doc.s).toBe(kept);
    expect(kept).toEqual(['a', 'b']);
    const ops = delta().addToSet(['t'], 'x').ops;
    const made = applyDelta({}, ops);
    applyDelta(made, delta().addToSet(['t'], 'y'));
    expect(made.t).toEqual(['x', 'y']);
    expect(ops[0]?.value).toEqual(['x']);
  });

  it('names a field as the text when it has nothing to escape, and escapes the rest', () => {
    expect(fieldName('Chrome 124')).toBe('Chrome 124');
    expect(fieldName('81.2.69.142')).toBe('81%2E2%2E69%2E142');
    expect(fieldName('$where%\0')).toBe('%24where%25%00');
  });
});

describe('coalesce', () => {
  it('merges compatible operations into one update', () => {
    const groups = coalesce([
      delta().inc(['n'], 1).max(['t'], at('10:00')),
      delta().inc(['n'], 2).max(['t'], at('09:00')).addToSet(['s'], 'a'),
      delta().addToSet(['s'], 'b', 'a'),
    ]);
    expect(groups).toHaveLength(1);
    expect(toUpdateDocument(groups[0]!)).toEqual({
      $inc: { n: 3 },
      $max: { t: at('10:00') },
      $addToSet: { s: { $each: ['a', 'b'] } },
    });
  });

  const conflicts: [string, ReturnType<typeof delta>[]][] = [
    ['a different operator on the same path', [delta().set(['n'], 5), delta().inc(['n'], 1)]],
    [
      'a path under one already set',
      [delta().set(['d', 'k'], { a: 1 }), delta().max(['d', 'k', 'seen'], at('10:00'))],
    ],
    ['a path above one already changed', [delta().inc(['d', 'k', 'n'], 1), delta().unset(['d', 'k'])]],
  ];
  it.each(conflicts)('starts a new update for %s (MongoDB refuses both in one)', (_name, deltas) => {
    expect(coalesce(deltas)).toHaveLength(2);
  });

  it('keeps the first setOnInsert and the last set', () => {
    const [g] = coalesce([
      delta().setOnInsert(['c'], 1).set(['s'], 'x'),
      delta().setOnInsert(['c'], 2).set(['s'], 'y'),
    ]);
    expect(toUpdateDocument(g!)).toEqual({ $setOnInsert: { c: 1 }, $set: { s: 'y' } });
  });

  it('lets a replacement overwrite everything before it, and starts anew after it', () => {
    const groups = coalesce([
      delta().inc(['n'], 1),
      replacement({ n: 10, s: ['a'] }),
      delta().inc(['n'], 2).addToSet(['s'], 'b'),
    ]);
    expect(groups).toHaveLength(2);
    expect(groups[0]?.replace).toEqual({ n: 10, s: ['a'] });
    expect(toUpdateDocument(groups[1]!)).toEqual({ $inc: { n: 2 }, $addToSet: { s: { $each: ['b'] } } });
    // Applied in memory, the same outcome, whatever was stored before.
    const stored = applyDelta({ n: 99, other: true }, [
      ...delta().inc(['n'], 1).ops,
      ...replacement({ n: 10, s: ['a'] }),
      ...delta().inc(['n'], 2).addToSet(['s'], 'b').ops,
    ]);
    expect(stored).toEqual({ n: 12, s: ['a', 'b'] });
  });

  it('writes unset as MongoDB expects', () => {
    expect(toUpdateDocument(coalesce([delta().unset(['a', 'b'])])[0]!)).toEqual({ $unset: { 'a.b': '' } });
  });

  // The property the flusher relies on: the coalesced updates, applied in order, give the same
  // document as the original deltas applied one by one (from an existing or a missing document).
  it('never changes the outcome (randomised, seeded)', () => {
    let seed = 42;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const paths = [['a'], ['b'], ['d', 'x'], ['d', 'y'], ['d'], ['e', 'f', 'g']];
    // Compared all at once (one assertion over every round, each named by its round and start).
    const groupedAll: Outcome[] = [];
    const sequentialAll: Outcome[] = [];
    for (let round = 0; round < 500; round++) {
      const deltas = Array.from({ length: 1 + rnd(6) }, () => {
        const d = delta();
        for (let i = 0, n = 1 + rnd(4); i < n; i++) {
          const path = paths[rnd(paths.length)] as string[];
          switch (rnd(7)) {
            case 0:
              d.inc(path, rnd(5));
              break;
            case 1:
              d.max(path, rnd(100));
              break;
            case 2:
              d.min(path, rnd(100));
              break;
            case 3:
              d.set(path, rnd(100));
              break;
            case 4:
              d.unset(path);
              break;
            case 5:
              d.setOnInsert(path, rnd(100));
              break;
            default:
              d.addToSet(path, `m${rnd(4)}`);
          }
        }
        return d;
      });
      for (const start of [null, { a: 1, d: { x: 2 } }] as (Doc | null)[]) {
        // Mixed types on one path are not something the hot path writes; skip those rounds.
        let sequential: Doc | null = start === null ? null : structuredClone(start);
        let grouped: Doc | null = start === null ? null : structuredClone(start);
        try {
          for (const d of deltas) sequential = applyDelta(sequential, d);
          for (const g of coalesce(deltas)) {
            const ops: OpEntry[] = [...g.fields].map(([p, { op, value }]) => ({
              op,
              path: p.split('.'),
              value,
            }));
            grouped = applyDelta(grouped, ops);
          }
        } catch {
          continue;
        }
        groupedAll.push(outcome(round, start, grouped));
        sequentialAll.push(outcome(round, start, sequential));
      }
    }
    expect(groupedAll).toEqual(sequentialAll);
    expect(sequentialAll.length).toBeGreaterThan(500);
  });
});

describe('Edit (changes applied in place, no delta kept)', () => {
  // What StateLayer.edit relies on: the same calls made on an Edit of the document give the
  // document a Delta of them would, applied (from an existing or a missing document).
  it('gives the document the same delta applied would (randomised, seeded)', () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const paths = [['a'], ['b'], ['d', 'x'], ['d', 'y'], ['d'], ['e', 'f', 'g'], ['s']];
    // Compared all at once (one assertion over every round, each named by its round and start).
    const edited: Outcome[] = [];
    const applied: Outcome[] = [];
    for (let round = 0; round < 500; round++) {
      const calls: ((c: Edit | ReturnType<typeof delta>) => void)[] = [];
      for (let i = 0, n = 1 + rnd(8); i < n; i++) {
        const path = paths[rnd(paths.length)] as string[];
        const v = rnd(100);
        const kind = rnd(8);
        calls.push((c) => {
          switch (kind) {
            case 0:
              c.inc(path, v % 5);
              break;
            case 1:
              c.max(path, v);
              break;
            case 2:
              c.min(path, v);
              break;
            case 3:
              c.set(path, { v });
              break;
            case 4:
              c.unset(path);
              break;
            case 5:
              c.setOnInsert(path, v);
              break;
            case 6:
              c.max(path, new Date(v * 1000));
              break;
            default:
              c.addToSet(path, `m${v % 4}`, `m${v % 3}`);
          }
        });
      }
      for (const start of [null, { a: 1, d: { x: 2 }, s: ['m1'] }] as (Doc | null)[]) {
        let want: Doc;
        const d = delta();
        try {
          for (const call of calls) call(d);
          want = applyDelta(start === null ? null : structuredClone(start), d);
        } catch {
          continue; // mixed types on one path: not something the hot path writes
        }
        const edit = new Edit(start === null ? {} : structuredClone(start), start === null);
        for (const call of calls) call(edit);
        edited.push(outcome(round, start, edit.doc));
        applied.push(outcome(round, start, want));
      }
    }
    expect(edited).toEqual(applied);
    expect(applied.length).toBeGreaterThan(500);
  });

  it('copies what it sets, and adds to a set in place', () => {
    const doc: Doc = { s: ['a'] };
    const kept = doc.s;
    const ctx = { ip: '1.2.3.4' };
    new Edit(doc, false).addToSet(['s'], 'a', 'b').set(['ctx'], ctx);
    ctx.ip = 'changed';
    expect(doc).toEqual({ s: ['a', 'b'], ctx: { ip: '1.2.3.4' } });
    expect(doc.s).toBe(kept);
  });
});

describe('fieldName', () => {
  // The escaping as the regular expressions it replaced wrote and read it: the same, character for character.
  const byRegex = (t: string) =>
    t === ''
      ? '%'
      : t.replace(/[%.$\0]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0').toUpperCase()}`);
  const fromRegex = (n: string) =>
    n === '%'
      ? ''
      : n.replace(/%([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  it('escapes and reads back as the regular expressions did (randomised, seeded)', () => {
    let seed = 11;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const alphabet = ['%', '.', '$', '\0', 'a', 'F', '4', '1', 'E', '2', ':', '\ud800', 'é'];
    // Differences are collected and asserted once: an expect() per case costs more than the cases.
    const differ: { text: string; name: string; back: string; read: string }[] = [];
    for (let round = 0; round < 3000; round++) {
      const text = Array.from({ length: rnd(9) }, () => alphabet[rnd(alphabet.length)]).join('');
      const name = fieldName(text);
      const read = fromFieldName(text);
      const back = fromFieldName(name);
      if (name !== byRegex(text) || read !== fromRegex(text) || back !== text)
        differ.push({ text, name, back, read });
    }
    expect(differ).toEqual([]);
  });

  it.each(['1.2.3.4', '$where', 'a%b', '', 'x\0y', '\ud800', 'plain'])(
    'escapes %j reversibly into a safe field name',
    (text) => {
      const name = fieldName(text);
      expect(name).not.toMatch(/[.$\0]/);
      expect(name.length).toBeGreaterThan(0);
      expect(fromFieldName(name)).toBe(text);
    },
  );
});

describe('objects keyed by data', () => {
  const keyed: KeyedPaths = [['d'], ['p', 't', '*']];
  const proto = (v: unknown) => Object.getPrototypeOf(v) as unknown;
  const at = (doc: Doc, ...path: string[]) =>
    path.reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], doc);

  /** The prototype of every object the document holds, by path ('d.k1': null when keyed). */
  function prototypes(doc: Doc): Record<string, 'none' | 'Object'> {
    const out: Record<string, 'none' | 'Object'> = {};
    const walk = (o: Doc, path: string[]) => {
      for (const k of Object.keys(o)) {
        const v = o[k];
        if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Date) continue;
        out[[...path, k].join('.')] = proto(v) === null ? 'none' : 'Object';
        walk(v as Doc, [...path, k]);
      }
    };
    walk(doc, []);
    return out;
  }

  const changes = (d: {
    inc(path: string[], by: number): unknown;
    set(path: string[], v: unknown): unknown;
  }) => {
    d.inc(['p', 't', 'ip', '1%2E2%2E3%2E4', 'c'], 1);
    d.inc(['p', 't', 'cc', 'GB', 'c'], 2);
    d.set(['d', 'k1', 'n'], 1);
    d.inc(['p', 'n'], 1);
    d.set(['x', 'y'], 1);
  };
  const expected = {
    p: 'Object',
    'p.t': 'Object',
    'p.t.ip': 'none',
    'p.t.ip.1%2E2%2E3%2E4': 'Object',
    'p.t.cc': 'none',
    'p.t.cc.GB': 'Object',
    d: 'none',
    'd.k1': 'Object',
    x: 'Object',
  };

  it('are made as dicts, and only they, by deltas applied and by changes in place', () => {
    const d = delta();
    changes(d);
    expect(prototypes(applyDelta(null, d, keyed))).toEqual(expected);
    const doc: Doc = {};
    changes(new Edit(doc, true, keyed));
    expect(prototypes(doc)).toEqual(expected);
    // Without the collection's paths, every object is a plain one.
    expect(Object.values(prototypes(applyDelta(null, d)))).not.toContain('none');
  });

  it('are made dicts when read back or replaced, with the same keys in the same order', () => {
    const read = JSON.parse(
      '{"p":{"t":{"ip":{"9%2E9%2E9%2E9":{"c":1},"1%2E1%2E1%2E1":{"c":2}},"cc":{"GB":{"c":3}}}},"d":{"b":{"n":1},"a":{"n":2}}}',
    ) as Doc;
    const before = JSON.stringify(read);
    toKeyed(read, keyed);
    expect(prototypes(read)).toEqual({
      p: 'Object',
      'p.t': 'Object',
      'p.t.ip': 'none',
      'p.t.ip.9%2E9%2E9%2E9': 'Object',
      'p.t.ip.1%2E1%2E1%2E1': 'Object',
      'p.t.cc': 'none',
      'p.t.cc.GB': 'Object',
      d: 'none',
      'd.b': 'Object',
      'd.a': 'Object',
    });
    expect(JSON.stringify(read)).toBe(before);
    const replaced = applyDelta(
      { old: 1 },
      [{ op: 'replace', path: [], value: JSON.parse(before) as Doc }],
      keyed,
    );
    expect(proto(at(replaced, 'p', 't', 'ip'))).toBeNull();
    expect(proto(at(replaced, 'd'))).toBeNull();
    expect(JSON.stringify(replaced)).toBe(before);
  });

  it('hold keys named like members of Object.prototype as any other key', () => {
    const d = delta();
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty'])
      d.inc(['p', 't', 'bf', name, 'c'], 1);
    const doc = applyDelta(null, d, keyed);
    const table = at(doc, 'p', 't', 'bf') as Record<string, { c: number }>;
    expect(Object.keys(table)).toEqual(['__proto__', 'constructor', 'toString', 'hasOwnProperty']);
    expect(Object.values(table).map((e) => e.c)).toEqual([1, 1, 1, 1]);
    // Nothing leaked into the objects every other object inherits from.
    expect(({} as Record<string, unknown>).c).toBeUndefined();
    expect(JSON.parse(JSON.stringify(doc))).toEqual({
      p: {
        t: {
          bf: JSON.parse(
            '{"__proto__":{"c":1},"constructor":{"c":1},"toString":{"c":1},"hasOwnProperty":{"c":1}}',
          ),
        },
      },
    });
  });
});
