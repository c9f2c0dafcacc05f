/**
 * The history tables of docs/detection.md and docs/performance.md are made from bench/results by
 * scripts/results-history.js: a run recorded without the tables regenerated fails here. The check
 * is the script's own (`--check`), called in this process rather than in a new one.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { staleDocs } = require('../../../scripts/results-history.js') as {
  staleDocs(opts?: { dir?: string; write?: boolean }): string[];
};

describe('generated docs', () => {
  it('the history tables are those bench/results makes (node scripts/results-history.js --write)', () => {
    expect(staleDocs()).toEqual([]);
  });
});
