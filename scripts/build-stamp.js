/**
 * What the build was made from: a sha256 over the path and content of every file the build reads
 * (the sources under src/ and bench/, the TypeScript configurations, the build scripts, and the
 * package manifest and lock, whose versions the bundles contain). scripts/build.js writes it into
 * dist/.build-stamp once a build has succeeded; `npm start` (scripts/start.js) rebuilds only when
 * the fingerprint of the files now differs from the stamp. Contents, not modification times: a
 * checkout or a `touch` that changes nothing rebuilds nothing. Hashing them takes ~20 ms.
 */
'use strict';
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
/** Directories whose every file is an input. */
const INPUT_DIRS = ['src', 'bench'];
/** Files of the project's root and of scripts/ that are inputs. */
const INPUT_FILES = (root) => [
  'package.json',
  'package-lock.json',
  ...fs.readdirSync(root).filter((f) => /^tsconfig.*\.json$/.test(f)),
  ...fs
    .readdirSync(path.join(root, 'scripts'))
    .filter((f) => /^build.*\.js$/.test(f))
    .map((f) => `scripts/${f}`),
];

function listFiles(root, dir, out) {
  let entries;
  try {
    entries = fs.readdirSync(path.join(root, dir), { withFileTypes: true });
  } catch (err) {
    if (err.code === 'ENOENT') return;
    throw err;
  }
  for (const e of entries) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) listFiles(root, rel, out);
    else if (e.isFile()) out.push(rel);
  }
}

/** The fingerprint of the build's inputs under `root` (the project by default). */
function fingerprint(root = ROOT) {
  const files = INPUT_FILES(root).filter((f) => fs.existsSync(path.join(root, f)));
  for (const dir of INPUT_DIRS) listFiles(root, dir, files);
  files.sort();
  const hash = createHash('sha256');
  for (const f of files) {
    hash.update(f).update('\0');
    hash.update(
      createHash('sha256')
        .update(fs.readFileSync(path.join(root, f)))
        .digest(),
    );
  }
  return hash.digest('hex');
}

const stampFile = (root = ROOT) => path.join(root, 'dist', '.build-stamp');

/** The fingerprint the last successful build recorded, or null (never built, or interrupted). */
function readStamp(root = ROOT) {
  try {
    return fs.readFileSync(stampFile(root), 'utf8').trim() || null;
  } catch {
    return null;
  }
}

function writeStamp(value, root = ROOT) {
  fs.mkdirSync(path.dirname(stampFile(root)), { recursive: true });
  fs.writeFileSync(stampFile(root), `${value}\n`);
}

function clearStamp(root = ROOT) {
  fs.rmSync(stampFile(root), { force: true });
}

/** Whether dist/ was built from the files as they are now. */
function isFresh(root = ROOT) {
  const stamp = readStamp(root);
  return stamp !== null && stamp === fingerprint(root);
}

module.exports = { fingerprint, readStamp, writeStamp, clearStamp, isFresh, stampFile };
