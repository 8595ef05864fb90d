// Loaded into every test process by package.json's "tap" node-arg, after tap's own --import hooks.
//
// tap's runner loads @tapjs/processinfo into each test process, and processinfo passes itself on to
// every child process: a process-on-spawn hook puts --import=…/processinfo into the child's
// NODE_OPTIONS. In a child it registers off-thread module hooks, which added about 1.5 s to the
// start of every spawned CLI or server on the 2-core CI machine. processinfo only serves coverage
// and `tap --changed`; coverage is off (package.json "disable-coverage"), so the children a test
// spawns start as plain node, as an operator would run them. The test process itself keeps it, and
// so do the children when a run collects coverage (`npx tap --no-disable-coverage`).
const coverage = process.env._TAPJS_PROCESSINFO_COVERAGE_ === '1';
const onSpawn = (globalThis as Record<symbol, { listeners?: unknown[] } | undefined>)[
  Symbol.for('process-on-spawn@*:singletonId')
];
if (!coverage && onSpawn?.listeners) onSpawn.listeners.length = 0;
const nodeOptions = process.env.NODE_OPTIONS;
if (!coverage && nodeOptions !== undefined) {
  const kept = nodeOptions.replace(/"?--(?:import|loader)[= ]\S*@tapjs\/processinfo\S*?"?(?=\s|$)/g, '').trim();
  if (kept === '') delete process.env.NODE_OPTIONS;
  else process.env.NODE_OPTIONS = kept;
}
