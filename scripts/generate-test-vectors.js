#!/usr/bin/env node
/**
 * Writes clients/test-vectors/*.json from the server's and the reference client's own code
 * (test/support/test-vectors/). Run it after a change to the token, allow-list or queue rules;
 * test/unit/client/test-vectors.spec.ts fails while the files and the code disagree.
 * `--check` writes nothing and exits 1 when a file differs.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const esbuild = require('esbuild');

const root = path.resolve(__dirname, '..');
// Bundled into dist/ (ignored), where the bundle's bare imports resolve to the project's node_modules.
fs.mkdirSync(path.join(root, 'dist'), { recursive: true });
const tmp = fs.mkdtempSync(path.join(root, 'dist', 'vectors-'));
const bundle = path.join(tmp, 'vectors.js');
esbuild.buildSync({
  entryPoints: [path.join(root, 'test', 'support', 'test-vectors', 'index.ts')],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile: bundle,
  packages: 'external',
  logLevel: 'error',
});

(async () => {
  const { buildVectors, vectorText, VECTORS_DIR } = require(bundle);
  // The bundle's __dirname is the temporary directory: write beside the sources.
  const dir = path.join(root, 'clients', 'test-vectors');
  void VECTORS_DIR;
  const files = await buildVectors();
  let differ = 0;
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(dir, name);
    const text = vectorText(content);
    const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
    if (current === text) continue;
    differ++;
    if (process.argv.includes('--check'))
      console.error(`${path.relative(root, file)} differs from what the code computes`);
    else {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(file, text);
      console.log(`wrote ${path.relative(root, file)}`);
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
  if (differ && process.argv.includes('--check')) process.exit(1);
})().catch((e) => {
  fs.rmSync(tmp, { recursive: true, force: true });
  console.error(e);
  process.exit(1);
});
