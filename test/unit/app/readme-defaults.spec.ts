/**
 * The README's configuration table against the code: a variable set to the default the table
 * gives must configure Rampart exactly as leaving it unset does. Every row whose default is one
 * value in code (`100000`, `separate`) is checked; rows that describe their default in words
 * ("none", "the larger of …") are not.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../../src/config';

const rows = readFileSync(path.join(__dirname, '..', '..', '..', 'README.md'), 'utf8')
  .split('\n')
  .map((line) => /^\| `(RAMPART_[A-Z0-9_]+|MONGODB_URI)` \| `([^`]+)` \|/.exec(line))
  .filter((m): m is RegExpExecArray => m !== null)
  .map((m) => [m[1], m[2]] as const);

describe("the README's defaults", () => {
  it('the table is found', () => {
    expect(rows.length).toBeGreaterThan(30);
  });

  it.each(rows)('%s=%s is what Rampart does unset', (name, value) => {
    expect(loadConfig({ [name]: value })).toEqual(loadConfig({}));
  });
});
