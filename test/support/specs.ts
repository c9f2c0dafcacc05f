/**
 * The unit tier's test files: each directory of test/unit is one jest test file (`test/unit/core.test.ts`
 * runs `test/unit/core/*.spec.ts`). Jest gives every test file a fresh module registry and its own
 * copy of the test framework, and loading those was most of a small unit file's time; the specs of a
 * directory share one load. Each spec runs inside a describe block named by its path
 * (`core/scoring`), so its hooks apply to its own tests only, and `npx jest test/unit/core -t
 * core/scoring` runs one spec.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';

/** Registers every `*.spec.ts` under `test/unit/<dir>` (subdirectories too), in path order. */
export function specs(dir: string): void {
  const root = path.join(__dirname, '..', 'unit', dir);
  const files = readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.spec.ts'))
    .map((f) => f.split(path.sep).join('/'))
    .sort();
  if (files.length === 0) throw new Error(`test/unit/${dir} holds no *.spec.ts`);
  for (const file of files)
    describe(`${dir}/${file.slice(0, -'.spec.ts'.length)}`, () => {
      // A spec registers its tests as it loads: required here, inside its own describe block.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      require(path.join(root, file));
    });
}
