/**
 * The digests the stores key documents by (an e-mail's record, a device's key, a user agent's
 * short key): the same text always gives the same digest of its UTF-8 bytes, whichever way Node
 * computes it, so documents written by an earlier version are found again.
 */
import { sha256Hex, shortHash } from '../../../src/core/crypto';

it.each([
  ['abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
  ['', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
  // Non-ASCII text is hashed as its UTF-8 bytes.
  ['é€😀', 'df9226927fd572c1ee66eec85de1bb139497614899f36e4e90474cb71f6ef9d0'],
])('sha256Hex(%j) is the SHA-256 of its UTF-8 bytes, in hex', (text, hex) => {
  expect(sha256Hex(text)).toBe(hex);
});

it.each([
  ['abc', 'qZk-NkcGgWq6PiVx'],
  // A lone surrogate is hashed as U+FFFD, as UTF-8 encoding writes it (never a throw).
  ['\ud800x', 'GxQ2bnMqcFtxLL-f'],
])('shortHash(%j) is 16 URL-safe characters of its SHA-1', (text, short) => {
  expect(shortHash(text)).toBe(short);
});
