import { BSON } from 'mongodb';
import { bsonSize } from '../../../src/store/state/flusher';
import { pack } from '../../../src/store/state/pack';

describe('bsonSize (the bytes a flush counts per document)', () => {
  it('is what BSON.calculateObjectSize counts, for packed documents and for any other', () => {
    const docs = [
      {
        _id: 'e:w:ip:81.2.69.142:494000',
        ...pack({ envId: 'e', expiresAt: new Date(0), c: { a: 1, f: 2.5 }, s: { u: ['ada', 'é€'] } }, [
          'envId',
          'expiresAt',
        ]),
      },
      {
        a: 1,
        b: 2.5,
        c: 2 ** 40,
        d: -5,
        e: true,
        f: null,
        g: undefined,
        h: 'ü€',
        i: -0x80000000,
        j: 0x80000000,
      },
      { n: NaN, m: Infinity, ключ: 'значение' },
      { nested: { x: [1, 'two', new Date(5)] }, at: new Date(7) },
      {},
    ];
    for (const d of docs) expect(bsonSize(d)).toBe(BSON.calculateObjectSize(d));
  });
});
