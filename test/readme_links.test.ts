/**
 * The README files and the docs pages point only at what a clone has: every relative link
 * resolves to a file inside the repository that git does not ignore (and a `#fragment` to
 * a heading of it, in the page itself or in another), and so does every file path the
 * READMEs and Parley's own docs pages name in a code span. The docs index links every page.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import MarkdownIt from 'markdown-it';
import { root } from './paths.js';

const md = new MarkdownIt();
type Token = ReturnType<typeof md.parse>[number];

/** Markdown files whose links are checked: the READMEs and everything under docs/. */
function documents(): string[] {
  const docs: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(root, dir))) {
      const path = join(dir, name);
      if (statSync(join(root, path)).isDirectory()) walk(path);
      else if (name.endsWith('.md')) docs.push(path);
    }
  };
  walk('docs');
  return ['README.md', 'bench/README.md', ...docs.sort()];
}

/** Link targets that are not links: the chat spec describes Markdown syntax in prose ("[filename](url)"). */
const NOT_LINKS: Record<string, string[]> = { [join('docs', 'spec', 'organization-chat-api.md')]: ['url'] };

/**
 * Files whose code spans are read as paths: the READMEs and Parley's own pages directly under
 * docs/ (docs/spec/ and docs/reference/ quote other projects' paths).
 */
const PATHS_IN_CODE = [
  'README.md',
  'bench/README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join('docs', name)),
];

/** Pages that name no file at all (so finding nothing to check there is no sign of a broken parse). */
const NAMES_NO_FILE = [join('docs', 'design.md')];

function inline(tokens: Token[]): Token[] {
  return tokens.flatMap((tok) => [tok, ...inline(tok.children ?? [])]);
}

/** GitHub's anchor for a heading. */
function slug(text: string): string {
  return text.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const tokens = md.parse(readFileSync(join(root, file), 'utf8'), {});
  const out = new Set<string>();
  tokens.forEach((tok, i) => {
    if (tok.type === 'heading_open') out.add(slug(tokens[i + 1].content));
  });
  return out;
}

function ignoredByGit(path: string): boolean {
  return spawnSync('git', ['check-ignore', '-q', path], { cwd: root }).status === 0;
}

/** Why `target`, named in `from`, does not resolve inside the repository; undefined when it does. */
function problem(from: string, target: string, bases: string[]): string | undefined {
  const [path, fragment] = target.split('#', 2) as [string, string | undefined];
  const candidates = path === '' ? [join(root, from)] : bases.map((base) => resolve(base, decodeURIComponent(path)));
  const found = candidates.find((c) => existsSync(c));
  if (!found) return `${target} does not exist (from ${from})`;
  const rel = relative(root, found);
  if (rel.startsWith('..') || rel.startsWith(sep)) return `${target} is outside the repository`;
  if (rel !== '' && ignoredByGit(rel)) return `${target} is ignored by git, so a clone does not have it`;
  if (fragment !== undefined && rel.endsWith('.md') && !anchors(rel).has(fragment)) return `${target}: no heading #${fragment} in ${rel}`;
  return undefined;
}

for (const file of documents()) {
  t.test(`links in ${file} resolve inside the repository`, async (t) => {
    const text = readFileSync(join(root, file), 'utf8');
    t.notMatch(text, /\.\.\/shared\//, 'nothing points at ../shared/');
    const tokens = inline(md.parse(text, {}));
    const hrefs = tokens.filter((tok) => tok.type === 'link_open').map((tok) => String(tok.attrGet('href') ?? ''));
    const relativeLinks = hrefs.filter((h) => !/^[a-z][a-z0-9+.-]*:/i.test(h) && !(NOT_LINKS[file] ?? []).includes(h));
    for (const href of relativeLinks) t.equal(problem(file, href, [dirname(join(root, file))]), undefined, `link ${href}`);
    if (!PATHS_IN_CODE.includes(file)) return;
    // A code span that is a file path (a slash and an extension, no placeholder) names a file
    // of the repository, relative to its root or to the README; dist/ is built by npm install.
    const paths = tokens
      .filter((tok) => tok.type === 'code_inline')
      .map((tok) => tok.content)
      .filter((c) => /^[\w.-]+(\/[\w.-]+)+\.(md|ts|mjs|js|json|yaml|sh)$/.test(c) && !c.startsWith('dist/'));
    for (const path of new Set(paths)) t.equal(problem(file, path, [root, dirname(join(root, file))]), undefined, `path ${path}`);
    if (!NAMES_NO_FILE.includes(file)) t.ok(relativeLinks.length + paths.length > 0, 'found something to check');
    else t.equal(relativeLinks.length + paths.length, 0, 'names no file (else take it off NAMES_NO_FILE)');
  });
}

t.test('the docs index links every page of docs/, and the README links the index and every page', async (t) => {
  const linked = (file: string): Set<string> => {
    const tokens = inline(md.parse(readFileSync(join(root, file), 'utf8'), {}));
    const hrefs = tokens.filter((tok) => tok.type === 'link_open').map((tok) => String(tok.attrGet('href') ?? ''));
    return new Set(hrefs.map((h) => relative(root, resolve(dirname(join(root, file)), h.split('#')[0]))));
  };
  const index = linked(join('docs', 'README.md'));
  const readme = linked('README.md');
  t.ok(readme.has(join('docs', 'README.md')), 'README.md links docs/README.md');
  const pages = documents().filter((d) => d.startsWith(`docs${sep}`) && d !== join('docs', 'README.md'));
  t.ok(pages.length >= 5, `${pages.length} pages under docs/`);
  for (const page of pages) t.ok(index.has(page), `docs/README.md links ${page}`);
  for (const page of PATHS_IN_CODE.filter((p) => p.startsWith(`docs${sep}`) && p !== join('docs', 'README.md'))) {
    t.ok(readme.has(page), `README.md links ${page}`);
  }
});
