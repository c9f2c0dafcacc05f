/**
 * The README's "Client libraries" table and docs/clients.md name test files and scripts that
 * exist, and every vector file: a renamed test or vector must not leave a command that runs
 * nothing.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..', '..');
const read = (f: string) => readFileSync(path.join(root, f), 'utf8');

describe('the client libraries documentation', () => {
  const readme = read('README.md');
  const table = readme.slice(readme.indexOf('## Client libraries'), readme.indexOf('## Browser client'));
  const clients = read('docs/clients.md');

  it('the README has the table, with a row per library on main', () => {
    expect(table).toContain('| Platform | Package | Install | Test command |');
    expect(table).toMatch(/\| Web \|/);
    expect(table).toMatch(/\| React Native \| `@rampart\/react-native` \|/);
  });

  it.each(['README.md', 'docs/clients.md'])('%s names only test files and scripts that exist', (file) => {
    const text = file === 'README.md' ? table : clients;
    const paths = [
      ...text.matchAll(/(?:test|scripts)\/[\w/.-]+\.(?:ts|js)\b|test\/[\w-]+\/[\w-]+(?=[ `])/g),
    ].map((m) => m[0]);
    expect(paths.length).toBeGreaterThan(3);
    for (const p of paths) expect([p, existsSync(path.join(root, p))]).toEqual([p, true]);
  });

  it('docs/clients.md links every vector file, and docs/README.md links docs/clients.md', () => {
    for (const f of readdirSync(path.join(root, 'clients', 'test-vectors')).filter((f) =>
      f.endsWith('.json'),
    ))
      expect(clients).toContain(`../clients/test-vectors/${f}`);
    expect(read('docs/README.md')).toContain('](clients.md)');
  });
});
