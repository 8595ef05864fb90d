/**
 * Where the repository is, for tests and helpers that read its files (fixtures, docs, the
 * sources). A test runs either compiled (`dist/test/x.test.js`, as `npm test` runs it) or from
 * its source under tsx (`npx tap test/x.test.ts`); `import.meta.dirname` differs between the
 * two, these paths do not.
 */
import { basename, dirname, join, relative } from 'node:path';

const here = import.meta.dirname;

/** True when this process runs the compiled tests (`dist/test/*.js`). */
export const compiled = basename(here) === 'test' && basename(dirname(here)) === 'dist';

/** The repository's root directory. */
export const root = compiled ? join(here, '..', '..') : join(here, '..');

/** The tests' source directory, `<root>/test`: fixtures are read from it. */
export const testDir = join(root, 'test');

/** A fixture's path: `fixturePath('format-v1')` is `<root>/test/fixtures/format-v1`. */
export function fixturePath(...parts: string[]): string {
  return join(testDir, 'fixtures', ...parts);
}

/**
 * The source file of a running test script, relative to the root: `dist/test/x.test.js` and
 * `test/x.test.ts` both give `test/x.test.ts`.
 */
export function sourceOf(script: string): string {
  const rel = relative(root, script);
  const m = /^dist[\\/](test[\\/].*)\.js$/.exec(rel);
  return m ? `${m[1]}.ts` : rel;
}
