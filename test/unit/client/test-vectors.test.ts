/**
 * The shared client test vectors (clients/test-vectors/) are what the code computes: a file that
 * disagrees with the server's token code or the reference client fails here. After a deliberate
 * change, `node scripts/generate-test-vectors.js` writes them again.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildVectors, vectorText, VECTORS_DIR } from '../../support/test-vectors';

describe('clients/test-vectors', () => {
  let computed: Record<string, unknown>;
  beforeAll(async () => {
    computed = await buildVectors();
  });

  it('holds exactly the generated files and the README', () => {
    expect(readdirSync(VECTORS_DIR).sort()).toEqual([...Object.keys(computed), 'README.md'].sort());
  });

  it.each(['tokens.json', 'allow-list.json', 'queue.json', 'proof.json'])(
    '%s is what the code computes',
    (file) => {
      const onDisk = readFileSync(join(VECTORS_DIR, file), 'utf8');
      expect(JSON.parse(onDisk)).toEqual(computed[file]);
      expect(onDisk).toBe(vectorText(computed[file]));
    },
  );

  it('the README describes every file', () => {
    const readme = readFileSync(join(VECTORS_DIR, 'README.md'), 'utf8');
    for (const file of Object.keys(computed)) expect(readme).toContain(`## ${file}`);
  });
});
