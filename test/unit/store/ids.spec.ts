import { idOf, keptIds } from '../../../src/store/ids';
import type { EnvId } from '../../../src/core/model';

const env = 'env-1' as EnvId;
/** The definition ids were first written with: every stored _id must keep this form. */
const reference = (...parts: string[]) =>
  [
    env,
    ...parts.map((p) =>
      encodeURIComponent(
        p.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'),
      ),
    ),
  ].join(':');

describe('idOf', () => {
  it.each([
    ['a counter key', ['w:ip:81.2.69.142:493838']],
    ['an IPv6 window', ['w:ip:2001:db8::1:493838']],
    ['plain text', ['alice']],
    ['several parts', ['user', 'dev:1']],
    ['an e-mail', ['Alice+x@Example.com']],
    ['spaces and slashes', ['Windows 10|Chrome/121 (x)']],
    ['unicode', ['café', '東京']],
    ['a lone surrogate', ['a\ud800b', '\udc00']],
    ['a valid surrogate pair', ['😀:x']],
    ['percent signs', ['%3A:%']],
    ['empty', ['']],
    ['no parts', []],
  ])('writes %s exactly as encodeURIComponent would', (_what, parts) => {
    expect(idOf(env, ...parts)).toBe(reference(...parts));
  });

  it('agrees with the reference on random text', () => {
    // Seeded: the same strings on every run.
    let seed = 7;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const alphabet = [
      'a',
      'Z',
      '0',
      ':',
      '.',
      '-',
      '_',
      '!',
      '~',
      '*',
      "'",
      '(',
      ')',
      ' ',
      '/',
      '|',
      '%',
      '+',
      'é',
      '\ud83d',
      '\ude00',
      '\u0000',
    ];
    // One expect for the lot, naming each string written otherwise than the reference.
    const wrong: [string, string, string][] = [];
    for (let i = 0; i < 2000; i++) {
      const s = Array.from(
        { length: Math.floor(next() * 12) },
        () => alphabet[Math.floor(next() * alphabet.length)],
      ).join('');
      if (idOf(env, s) !== reference(s)) wrong.push([s, idOf(env, s), reference(s)]);
    }
    expect(wrong).toEqual([]);
  });
});

describe('keptIds', () => {
  it("answers idOf's id for every environment and key, past its bound shared by all environments", () => {
    const kept = keptIds(5);
    const envs = ['env-a', 'env-b', 'env-c'] as EnvId[];
    for (let round = 0; round < 3; round++)
      for (let k = 0; k < 4; k++)
        for (const e of envs) {
          const key = `w:ip:10.0.0.${k}:49383${round % 2}`;
          expect(kept(e, key)).toBe(idOf(e, key));
        }
  });
});
