/**
 * `npm install` in a fresh clone must leave package-lock.json as committed. npm rewrites
 * the lock when its `packages` are not in the order npm writes them (`localeCompare` in
 * English, so `node_modules/uWebSockets.js` sorts after `node_modules/uuid`, not before
 * `node_modules/uc.micro` as in code-point order), or when its root entry differs from
 * package.json.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './paths.js';

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
const packages = lock.packages as Record<string, Record<string, any>>;

/**
 * Platform packages of msgpackr-extract that the registry this project is built against
 * does not serve at 3.0.7, so their integrity could not be recorded: on macOS, Windows or
 * 32-bit ARM Linux, npm adds it to the lock on the first install.
 */
const WITHOUT_INTEGRITY = [
  'node_modules/@msgpackr-extract/msgpackr-extract-darwin-arm64',
  'node_modules/@msgpackr-extract/msgpackr-extract-darwin-x64',
  'node_modules/@msgpackr-extract/msgpackr-extract-linux-arm',
  'node_modules/@msgpackr-extract/msgpackr-extract-win32-x64',
];

t.test('packages are in the order npm writes them', async (t) => {
  const keys = Object.keys(packages);
  const sorted = [...keys].sort((a, b) => a.localeCompare(b, 'en'));
  const first = keys.findIndex((k, i) => k !== sorted[i]);
  t.equal(first, -1, first === -1 ? 'in order' : `${keys[first]} is where npm writes ${sorted[first]}`);
  t.ok(keys.indexOf('node_modules/uWebSockets.js') > keys.indexOf('node_modules/uuid'), 'the uWebSockets.js alias sorts after uuid');
});

t.test('the root entry is package.json', async (t) => {
  const rootEntry = packages[''];
  t.equal(lock.name, pkg.name);
  t.equal(lock.version, pkg.version);
  for (const field of ['name', 'version', 'license', 'dependencies', 'devDependencies', 'engines', 'bin']) {
    t.same(rootEntry[field], pkg[field], field);
  }
});

t.test('the uWebSockets.js alias resolves to the package it names', async (t) => {
  const spec = /^npm:(@[^@]+)@(.+)$/.exec(pkg.dependencies['uWebSockets.js']);
  t.ok(spec, 'an npm: alias');
  const entry = packages['node_modules/uWebSockets.js'];
  t.equal(entry.name, spec![1]);
  t.equal(entry.version, spec![2]);
  t.match(entry.integrity, /^sha512-/);
});

t.test('every package records its integrity, but the known platform packages', async (t) => {
  const missing = Object.entries(packages)
    .filter(([key, entry]) => key !== '' && !entry.link && !entry.integrity)
    .map(([key]) => key);
  t.same(missing, WITHOUT_INTEGRITY);
  for (const key of WITHOUT_INTEGRITY) t.equal(packages[key].optional, true, `${key} is optional`);
});
