/**
 * The shared client test vectors (clients/test-vectors/) are what the code computes: a file that
 * disagrees with the server's token code or the reference client fails here (the queue scenarios,
 * run on the React Native client, one by one). After a deliberate
 * change, `node scripts/generate-test-vectors.js` writes them again.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildVectors, readVectors, vectorText, VECTORS_DIR } from '../../support/test-vectors';
import type { Scenario } from '../../support/test-vectors/queue';

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

  // Each scenario every client library runs (queue.json), as the React Native client ran it for
  // the file above: named, so that a client's failure here reads as it does in its own suite.
  const scenarios = (readVectors('queue.json') as { scenarios: Scenario[] }).scenarios;
  it.each(scenarios.map((sc) => [sc.name, sc] as const))('queue.json: %s', (_name, sc) => {
    const ran = (computed['queue.json'] as { scenarios: Scenario[] }).scenarios.find(
      (c) => c.name === sc.name,
    );
    expect(ran?.steps).toEqual(sc.steps);
  });

  it('the README describes every file', () => {
    const readme = readFileSync(join(VECTORS_DIR, 'README.md'), 'utf8');
    for (const file of Object.keys(computed)) expect(readme).toContain(`## ${file}`);
  });
});
