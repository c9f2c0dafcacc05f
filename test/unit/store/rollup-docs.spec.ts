/** Packed copies of rollups' dimensions: the top values, largest first, the rest as overflow. */
import { asEnvId } from '../../../src/core/model';
import { addPacked, emptyDimensions, pack } from '../../../src/store/rollup-docs';

const ENV = asEnvId('e');

const sumOf = (ip: Record<string, number>, overflow = 0) => {
  const sum = emptyDimensions();
  for (const [k, n] of Object.entries(ip)) sum.byDimension.ip.set(k, n);
  sum.overflow.ip = overflow;
  sum.byDimension.country.set('GR', 7);
  return sum;
};

it('keeps the top values per dimension, ties by value, and counts the rest as overflow', () => {
  const doc = pack(
    'e:D:0:p:all',
    ENV,
    new Date(0),
    17,
    sumOf({ '10.0.0.3': 1, '10.0.0.1': 5, '10.0.0.2': 5, '10.0.0.4': 2 }, 4),
    2,
  );
  expect(JSON.parse(doc.p.ip)).toEqual([
    ['10.0.0.1', 5],
    ['10.0.0.2', 5],
  ]);
  // The two dropped (1 + 2) and the overflow it was given (4).
  expect(doc.o).toEqual({ ip: 7, asn: 0, cc: 0 });
  expect(doc.k).toBe(3);
  expect(doc.n).toBe(17);
});

it('reads back what it packed, added to what is there', () => {
  const into = sumOf({ '10.0.0.1': 1 });
  addPacked(into, pack('x', ENV, new Date(0), 9, sumOf({ '10.0.0.1': 2, 'a.b': 3 }), 100));
  expect([...into.byDimension.ip]).toEqual([
    ['10.0.0.1', 3],
    ['a.b', 3],
  ]);
  expect(into.byDimension.country.get('GR')).toBe(14);
  expect(into.overflow.ip).toBe(0);
});
