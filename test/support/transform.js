/**
 * Jest's TypeScript transform: esbuild strips the types of one file at a time (as ts-jest does with
 * `isolatedModules`), to CommonJS with a source map, in a fraction of ts-jest's time and without
 * loading the TypeScript compiler in every worker. Types are checked by `npm run typecheck`.
 *
 * A file that calls `jest.mock` goes through ts-jest, which hoists those calls above the imports
 * (esbuild keeps statements where they are).
 */
'use strict';
const { createHash } = require('node:crypto');
const { readFileSync } = require('node:fs');
const { transformSync, version } = require('esbuild');

/** What tsconfig.json says that changes the emitted code (esbuild reads no tsconfig here). */
const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    useDefineForClassFields: true,
    esModuleInterop: true,
  },
};

let tsJest = null;
const hoisting = (source) =>
  /\bjest\s*\.\s*(mock|unmock|enableAutomock|disableAutomock|deepUnmock)\s*\(/.test(source);

function viaTsJest() {
  tsJest ??= require('ts-jest').default.createTransformer({ isolatedModules: true, diagnostics: false });
  return tsJest;
}

const SELF = readFileSync(require.resolve('./transform.js'), 'utf8');

module.exports = {
  canInstrument: false,
  getCacheKey(source, filename, options) {
    if (hoisting(source)) return viaTsJest().getCacheKey(source, filename, options);
    return createHash('sha256')
      .update(SELF)
      .update('\0')
      .update(version)
      .update('\0')
      .update(filename)
      .update('\0')
      .update(source)
      .digest('hex');
  },
  process(source, filename, options) {
    if (hoisting(source)) return viaTsJest().process(source, filename, options);
    const out = transformSync(source, {
      loader: filename.endsWith('.tsx') ? 'tsx' : 'ts',
      format: 'cjs',
      target: 'node20',
      platform: 'node',
      sourcemap: 'external',
      sourcefile: filename,
      sourcesContent: false,
      tsconfigRaw: TSCONFIG,
      // `import()` becomes a `require` in a promise, as tsc's CommonJS makes it (jest's module
      // registry serves require; a real import() needs its ESM support).
      supported: { 'dynamic-import': false },
    });
    return { code: out.code, map: out.map };
  },
};
