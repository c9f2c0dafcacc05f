/**
 * The project's root directory (where package.json, proto/, scripts/ and .tools/ are), whether
 * the code runs from src/ (ts-jest) or from dist/src/ (built).
 */
import path from 'node:path';

export const PROJECT_ROOT = path.resolve(
  __dirname,
  '..',
  ...(__dirname.includes(`${path.sep}dist${path.sep}`) ? ['..'] : []),
);
