/**
 * The memory limit's pieces that need no server: how a limit is parsed, how the running
 * heap's limit is compared with it, and the Node arguments of a relaunch.
 */
import t from 'tap';
import { getHeapStatistics } from 'node:v8';
import { heapLimitMatches, MiB, parseMemoryLimitMib, YOUNG_GENERATION_MIB } from '../src/memory/limit.js';
import { nodeArgs } from '../src/memory/relaunch.js';

t.test('a limit is a whole number of MiB, at least 128', async (t) => {
  t.equal(parseMemoryLimitMib('128'), 128);
  t.equal(parseMemoryLimitMib('16384'), 16384);
  for (const bad of ['127', '64', '0', '-1', '1.5', '1G', '']) t.throws(() => parseMemoryLimitMib(bad), `'${bad}' is refused`);
});

t.test("this process's heap limit matches the --max-old-space-size it was started with, and no other", async (t) => {
  const oldSpaceMib = Math.round(getHeapStatistics().heap_size_limit / MiB) - YOUNG_GENERATION_MIB;
  t.ok(heapLimitMatches(oldSpaceMib), `${oldSpaceMib} MiB matches`);
  t.notOk(heapLimitMatches(oldSpaceMib + 100), 'a larger limit does not');
  t.notOk(heapLimitMatches(oldSpaceMib - 100), 'a smaller one does not');
});

t.test("a relaunch keeps Node's other arguments and replaces any heap size flag", async (t) => {
  t.same(nodeArgs([], 256), ['--max-old-space-size=256']);
  t.same(nodeArgs(['--import', 'tsx'], 256), ['--import', 'tsx', '--max-old-space-size=256']);
  t.same(nodeArgs(['--max-old-space-size=4096', '--enable-source-maps'], 512), ['--enable-source-maps', '--max-old-space-size=512']);
  t.same(nodeArgs(['--max_old_space_size', '100', '--trace-gc'], 512), ['--trace-gc', '--max-old-space-size=512']);
});
