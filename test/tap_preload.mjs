// Loaded into every test process by package.json's "tap" node-arg, after tap's own --import hooks.
// Plain JavaScript, so that node loads it before any TypeScript loader is in place.
import crypto from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join, relative, resolve } from 'node:path';

// 1. The test file's form. `npm test` runs the compiled tests (`dist/test/*.test.js`, built by
// `npm run build:test`) with plain node: the tsx loader cost about 1 s of CPU per file. A file
// given as its source (`npx tap test/x.test.ts`) runs under tsx, as every test did before.
const main = process.argv[1] ?? '';
const root = process.cwd();
if (/\.[cm]?tsx?$/.test(main)) {
  await import('tsx');
} else if (relative(root, resolve(main)).startsWith(join('dist', 'test'))) {
  // A compiled test tests the compiled sources it imports: refuse a build older than any source,
  // or a compiled test whose source is gone. `npm test` has just built (`pretest`).
  const source = join(root, relative(join(root, 'dist'), resolve(main))).replace(/\.js$/, '.ts');
  if (!existsSync(source)) throw new Error(`${relative(root, main)} has no source ${relative(root, source)}: run \`npm run build:test\` (it clears dist/test)`);
  // tap names a test, its snapshot file and its snapshots' keys after the main script
  // (process.argv[1], read when the test calls them): the source's name, so that a compiled test
  // and its source are one test to tap (`test/x.test.ts > TAP > ...`, tap-snapshots/test/x.test.ts.test.cjs).
  // Node has already chosen the module to run.
  process.argv[1] = source;
  if (process.env.npm_lifecycle_event !== 'test') {
    const stale = [];
    for (const top of ['src', 'actors', 'snapshots', 'bench', 'test']) {
      for (const entry of readdirSync(join(root, top), { recursive: true, withFileTypes: true })) {
        if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
        const file = join(entry.parentPath, entry.name);
        let built = -1;
        try {
          built = statSync(join(root, 'dist', relative(root, file).replace(/\.ts$/, '.js'))).mtimeMs;
        } catch {}
        if (built < statSync(file).mtimeMs) stale.push(relative(root, file));
      }
    }
    if (stale.length > 0) throw new Error(`dist/ is older than ${stale.slice(0, 3).join(', ')}${stale.length > 3 ? ` and ${stale.length - 3} more` : ''}: run \`npm run build:test\` (npm test does)`);
  }
}

// 2. Plain children. tap's runner loads @tapjs/processinfo into each test process, and processinfo
// passes itself on to every child process: a process-on-spawn hook puts --import=…/processinfo
// into the child's NODE_OPTIONS. In a child it registers off-thread module hooks, which added
// about 1.5 s to the start of every spawned CLI or server on the 2-core CI machine. processinfo
// only serves coverage and `tap --changed`; coverage is off (package.json "disable-coverage"), so
// the children a test spawns start as plain node, as an operator would run them. The test process
// itself keeps it, and so do the children when a run collects coverage
// (`npx tap --no-disable-coverage`).
const coverage = process.env._TAPJS_PROCESSINFO_COVERAGE_ === '1';
const onSpawn = globalThis[Symbol.for('process-on-spawn@*:singletonId')];
if (!coverage && onSpawn?.listeners) onSpawn.listeners.length = 0;
const nodeOptions = process.env.NODE_OPTIONS;
if (!coverage && nodeOptions !== undefined) {
  const kept = nodeOptions.replace(/"?--(?:import|loader)[= ]\S*@tapjs\/processinfo\S*?"?(?=\s|$)/g, '').trim();
  if (kept === '') delete process.env.NODE_OPTIONS;
  else process.env.NODE_OPTIONS = kept;
}

// 3. scrypt at a test cost. Parley hashes passwords with scrypt at N = 16384 (about 40 ms of
// CPU each), and the tests create thousands of users: that was most of the suite's CPU. Every
// test process, and the servers and CLIs it starts (they inherit the environment), hash at
// N = 16 instead: actors/rules/passwords.ts writes the N into each such hash and verifies
// with the hash's own N, and only honours this variable outside NODE_ENV=production. Hashes
// made at Parley's cost (the fixtures' data directories) still verify at that cost. A run
// that wants Parley's own cost sets PARLEY_TEST_SCRYPT_N=16384.
process.env.PARLEY_TEST_SCRYPT_N ??= '16';

// 4. scrypt, memoized in the test process (it mattered most at Parley's own cost, and still
// serves a run at PARLEY_TEST_SCRYPT_N=16384). The fixtures create many users: POST /users hashes a password, and
// fetch_api_key then derives the same key again from the same password and salt. scrypt is a
// pure function, so the test process remembers what it derived, by password, salt, length and
// parameters, and answers a repeat (asynchronously, as scrypt does) without deriving it again.
// Every hash and every comparison is the same; a password that differs in any byte (`pw` and
// `pw\0`), or a new salt, is derived afresh. Processes the tests spawn are not affected.
const derive = crypto.scrypt;
const derived = new Map();
/** A key for an scrypt input, or undefined when it is of a kind not remembered. */
function part(x) {
  if (typeof x === 'string') return `s${x}`;
  if (x instanceof Uint8Array) return `b${Buffer.from(x.buffer, x.byteOffset, x.byteLength).toString('hex')}`;
  return undefined;
}
crypto.scrypt = function scrypt(password, salt, keylen, options, callback) {
  if (typeof options === 'function') [options, callback] = [undefined, options];
  const p = part(password);
  const s = part(salt);
  const key = p === undefined || s === undefined ? undefined : JSON.stringify([p, s, keylen, options ?? null]);
  const hit = key === undefined ? undefined : derived.get(key);
  if (hit !== undefined) {
    setImmediate(callback, null, Buffer.from(hit));
    return;
  }
  derive(password, salt, keylen, options ?? {}, (err, out) => {
    if (!err && key !== undefined) derived.set(key, Buffer.from(out));
    callback(err, out);
  });
};
syncBuiltinESMExports();
