/**
 * docs/architecture.md's promise about the module graph: arrows point one way (`src/` -> `actors/` and
 * `snapshots/`; `actors/` imports nothing from `src/`; `snapshots/` takes only types from
 * `actors/`), and no import closes a cycle anywhere, type-only imports included: they are
 * erased at build time, but a cycle of types is still two modules that cannot be read, or
 * changed, one without the other.
 */
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { root } from './paths.js';

const IMPORT = /^(?:import|export)\s+(type\s+)?[^'"]*?from\s+'(\.[^']+)'/gm;

/** Every module under the three code directories, with the modules it imports (`values`: only value imports). */
function graph(values: boolean): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const top of ['src', 'actors', 'snapshots']) {
    for (const entry of readdirSync(join(root, top), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
      const file = join(entry.parentPath, entry.name);
      const deps: string[] = [];
      for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
        if (m[1] && values) continue;
        deps.push(relative(root, normalize(join(dirname(file), m[2].replace(/\.js$/, '.ts')))));
      }
      edges.set(relative(root, file), deps);
    }
  }
  return edges;
}

/** The cycles a depth-first walk closes, each as the path that closes it. */
function cycles(edges: Map<string, string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const found: string[][] = [];
  const stack: string[] = [];
  const visit = (u: string): void => {
    state.set(u, 'open');
    stack.push(u);
    for (const v of edges.get(u) ?? []) {
      if (state.get(v) === 'open') found.push([...stack.slice(stack.indexOf(v)), v]);
      else if (!state.has(v)) visit(v);
    }
    stack.pop();
    state.set(u, 'done');
  };
  for (const u of edges.keys()) if (!state.has(u)) visit(u);
  return found;
}

const edges = graph(false);
const valueEdges = graph(true);

t.test('the walk finds a cycle when there is one', async (t) => {
  const made = new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']], ['d.ts', ['a.ts']]]);
  t.same(cycles(made), [['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
  t.same(cycles(new Map([['a.ts', ['b.ts']], ['b.ts', []]])), []);
});

t.test('no import closes a cycle', async (t) => {
  t.ok(edges.size > 100, `the graph has the code's modules (${edges.size})`);
  t.same(cycles(edges).map((c) => c.join(' -> ')), []);
});

t.test('arrows point one way', async (t) => {
  const crossing = (from: string, to: string): string[] =>
    [...valueEdges].flatMap(([file, deps]) => (file.startsWith(from) ? deps.filter((d) => d.startsWith(to)).map((d) => `${file} -> ${d}`) : []));
  t.same(crossing('actors/', 'src/'), [], 'actors/ imports nothing from src/');
  t.same(crossing('snapshots/', 'src/'), [], 'nor does snapshots/');
  t.same(crossing('snapshots/', 'actors/'), [], 'snapshots/ takes only types from actors/');
});
