/**
 * The history tables of docs/detection.md and docs/performance.md are made from bench/results by
 * scripts/results-history.js: a run recorded without the tables regenerated fails here.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');

describe('generated docs', () => {
  it('the history tables are those bench/results makes (node scripts/results-history.js --write)', () => {
    const run = spawnSync(process.execPath, [path.join(root, 'scripts', 'results-history.js'), '--check'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});
