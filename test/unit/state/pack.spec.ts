/**
 * Packed documents (the embedded database's stored form): what goes in comes out, dates
 * included, the query fields stay where queries find them, and plain documents read as they are.
 */
import { pack, PACKED, unpack, unpackRead } from '../../../src/store/state/pack';

describe('pack / unpack', () => {
  const doc = {
    envId: 'env1',
    userId: 'u1',
    email: 'ada@example.com',
    lastSeenAt: new Date('2026-11-23T10:00:00.000Z'),
    n: 3,
    countries: ['GB', 'FR'],
    d: {
      'f%3Aabc': {
        tokens: ['t1'],
        createdAt: new Date('2026-01-01T00:00:00.000Z'),
        risk: null,
        flags: { a: true },
      },
    },
  };

  it('keeps the query fields as they are and packs the rest into one string', () => {
    const stored = pack(doc, ['envId', 'userId', 'email', 'lastSeenAt']);
    expect(Object.keys(stored).sort()).toEqual([PACKED, 'email', 'envId', 'lastSeenAt', 'userId'].sort());
    expect(stored.lastSeenAt).toBeInstanceOf(Date);
    expect(typeof stored[PACKED]).toBe('string');
  });

  it('round-trips every value, nested dates included', () => {
    expect(unpack(pack(doc, ['envId']))).toEqual(doc);
    expect((unpack(pack(doc, [])).d as typeof doc.d)['f%3Aabc']?.createdAt).toBeInstanceOf(Date);
  });

  it('round-trips dates inside arrays, and never changes the document it packs', () => {
    const at = new Date('2026-11-23T12:00:00.000Z');
    const withArrays = { list: [at, { when: at, tags: ['x'] }, [at]], plain: [1, 'two', null], empty: {} };
    const before = JSON.stringify(withArrays);
    const back = unpack(pack(withArrays, []));
    expect(back).toEqual(withArrays);
    expect((back.list as unknown[])[0]).toBeInstanceOf(Date);
    expect(JSON.stringify(withArrays)).toBe(before);
    expect(withArrays.list[0]).toBeInstanceOf(Date);
  });

  it('leaves text that looks like a packed date as text', () => {
    const tricky = { note: '{"$date": 5}', obj: { $date: 'not a number' } };
    expect(unpack(pack(tricky, []))).toEqual(tricky);
  });

  it('reads a document that is not packed as it is', () => {
    expect(unpack({ a: 1, b: { c: 2 } })).toEqual({ a: 1, b: { c: 2 } });
  });

  it('reads a document from the database without its _id, packed or not', () => {
    const stored = { _id: 'env1:u1', ...pack(doc, ['envId', 'userId', 'email', 'lastSeenAt']) };
    const read = unpackRead(stored);
    expect(read).toEqual(doc);
    expect(Object.keys(read)).toEqual(Object.keys(unpack(stored)).filter((k) => k !== '_id'));
    expect(stored._id).toBe('env1:u1');
    expect(unpackRead({ _id: 'x', a: 1, b: { c: 2 } })).toEqual({ a: 1, b: { c: 2 } });
  });
});
