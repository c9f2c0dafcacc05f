/**
 * clients/test-vectors/proof.json: the collector's proof of work (core/client/proof.ts), what a
 * browser (or any client that asks for a challenge) computes: for a salt and a difficulty, the
 * first nonce counting 0, 1, 2, … that holds, and nonces that do or do not hold, as the server
 * judges them.
 */
import { createHash } from 'node:crypto';
import { leadingZeroBits, proofHolds } from '../../../src/core/client/proof';

const SALTS: [string, number][] = [
  ['k3J9pQ2vX8mN4rT6wY1zAb', 0],
  ['k3J9pQ2vX8mN4rT6wY1zAb', 1],
  ['k3J9pQ2vX8mN4rT6wY1zAb', 8],
  ['k3J9pQ2vX8mN4rT6wY1zAb', 12],
  ['Zz_-0123456789abcdefgh', 10],
  ['salt~with!printable#chars', 9],
];

export function proofVectors() {
  const first = (salt: string, d: number) => {
    for (let n = 0; ; n++) if (proofHolds(salt, String(n), d)) return String(n);
  };
  return {
    solve: SALTS.map(([salt, difficulty]) => {
      const nonce = first(salt, difficulty);
      return {
        salt,
        difficulty,
        nonce,
        sha256_hex: createHash('sha256').update(`${salt}${nonce}`, 'utf8').digest('hex'),
      };
    }),
    check: SALTS.flatMap(([salt, difficulty]) =>
      ['0', '1', '42', '1000', first(salt, difficulty)].map((nonce) => {
        const digest = createHash('sha256').update(`${salt}${nonce}`, 'utf8').digest();
        return {
          salt,
          difficulty,
          nonce,
          zero_bits: leadingZeroBits(digest),
          holds: proofHolds(salt, nonce, difficulty),
        };
      }),
    ),
  };
}
