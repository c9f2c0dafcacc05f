/** The cores the embedded FerretDB may run on at once (store/embedded.ts): all but Rampart's one. */
import { ferretdbCores } from '../../../src/store/embedded';

describe('ferretdbCores', () => {
  it.each([
    [1, 1],
    [2, 1],
    [4, 3],
    [16, 15],
  ])('on %i cores: %i', (cores, expected) => {
    expect(ferretdbCores(cores)).toBe(expected);
  });
});
