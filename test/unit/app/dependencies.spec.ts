/**
 * The packages package-lock.json installs run on the Node release line package.json's `engines`
 * accepts (20): one whose own `engines.node` leaves out every Node 20 makes `npm ci` warn
 * EBADENGINE on a machine the README calls enough, and may not run there. package.json's
 * `overrides` pin such packages to versions that still run on 20.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const semver = createRequire(__filename)('semver') as {
  intersects(a: string, b: string): boolean;
  minVersion(range: string): { major: number } | null;
};

const ROOT = path.resolve(__dirname, '..', '..', '..');
const json = <T>(file: string): T => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8')) as T;
const pkg = json<{ engines: { node: string } }>('package.json');
const lock = json<{ packages: Record<string, { version?: string; engines?: unknown }> }>('package-lock.json');

describe('the locked dependencies and Node', () => {
  const line = semver.minVersion(pkg.engines.node)?.major;

  it('package.json names the oldest Node release line it runs on', () => {
    expect(line).toBe(20);
  });

  it('installs no package that leaves out every release of that line', () => {
    const refusing = Object.entries(lock.packages)
      .filter(([where]) => where !== '')
      .flatMap(([where, p]) => {
        const wants =
          p.engines && typeof p.engines === 'object' && !Array.isArray(p.engines)
            ? (p.engines as { node?: unknown }).node
            : undefined;
        return typeof wants === 'string' && !semver.intersects(wants, `^${line}`)
          ? [`${where.replace(/^.*node_modules\//, '')}@${p.version}: node ${wants}`]
          : [];
      });
    expect(refusing).toEqual([]);
  });
});
