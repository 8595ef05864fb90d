/**
 * The fan-out's own CPU, in process and without sockets: `node dist/bench/fanout_micro.js
 * [--n N] [--rounds R]`. N queues (spread over 16 users of one channel) each park a
 * poll whose waiter only notes the time; one channel message is sent through the HTTP
 * pipeline (`inject`), with a log that is durable at once. Per round: from the log's
 * durability callback to the first reply (the work done before the first write), the
 * whole delivery pass, and the pass per reply; medians over R rounds (after a warm-up),
 * with min and max. What uWS and the kernel add per reply is not here (see the fanout
 * scenario); what routing, rendering and the queues cost is.
 */
import { performance } from 'node:perf_hooks';
import { defaultRuntimeOptions, Runtime, type FactSink } from '../actors/runtime/runtime.js';
import type { Waiter } from '../actors/event_queues/index.js';
import { createOrganization } from '../src/bootstrap.js';
import { loadConfig } from '../src/config.js';
import { ChatApp } from '../src/http/chat_app.js';
import { inject } from '../src/http/inject.js';
import { quietLogger } from '../actors/core/logger.js';
import { chatRoutes } from '../src/routes/chat/index.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const N = arg('--n', 5000);
const ROUNDS = arg('--rounds', 20);
const USERS = 16;
/** Where a reply's first event id begins (each reply here carries one event). */
const EVENTS = '"events":[{"id":';

/** This process's CPU time (user + system, all threads), in ms: the machine may be shared, so wall time alone misleads. */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main(): Promise<void> {
  let durableAt = 0;
  let durableCpu = 0;
  const sink: FactSink = {
    append(_records, onDurable) {
      queueMicrotask(() => {
        durableAt = performance.now();
        durableCpu = cpuMs();
        onDurable();
      });
    },
  };
  const runtime = new Runtime(defaultRuntimeOptions(sink));
  const off = { requests: 0, windowSecs: 60 };
  const app = new ChatApp(chatRoutes, runtime, { ...loadConfig([], {}), rateLimit: off, rateLimitAnonymous: off, rateLimitAuthenticate: off }, quietLogger);
  const org = await createOrganization(runtime, { name: 'Bench', subdomain: '', ownerEmail: 'owner@example.com', ownerPassword: 'pw', ownerName: 'Owner' });
  const auth = (email: string, key: string) => 'Basic ' + Buffer.from(`${email}:${key}`).toString('base64');
  const owner = auth(org.owner.email, org.owner.api_key);
  const call = async (who: string, method: string, path: string, body: Record<string, string>) => {
    const res = await inject(app, { method, url: path, body: new URLSearchParams(body).toString(), headers: { authorization: who, 'content-type': 'application/x-www-form-urlencoded' } });
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.body}`);
    return res.json;
  };
  const userIds: number[] = [org.owner.user_id];
  for (let i = 1; i < USERS; i++) userIds.push((await call(owner, 'POST', '/api/v1/users', { email: `u${i}@example.com`, password: 'pw-pw-pw-pw', full_name: `User ${i}` })).user_id);
  await call(owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'general' }]), principals: JSON.stringify(userIds) });
  await call(owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'first' });
  const queues: Array<{ id: string; user: number }> = [];
  for (let i = 0; i < N; i++) {
    const user = userIds[i % USERS];
    const { queueId, durable } = runtime.queues.register({ org: org.organization_id, user_id: user, event_types: ['message'], narrow: [], client: 'bench', lifespan_secs: null, empty_topic_name: false });
    await durable;
    queues.push({ id: queueId, user });
  }
  await new Promise((r) => setImmediate(r));
  const lastIds = new Array<number>(N).fill(-1);
  const firsts: number[] = [];
  const passes: number[] = [];
  const firstCpus: number[] = [];
  const passCpus: number[] = [];
  for (let round = 0; round <= ROUNDS; round++) {
    const times = new Float64Array(N);
    let answered = 0;
    let firstCpu = 0;
    let lastCpu = 0;
    let done: () => void = () => undefined;
    const all = new Promise<void>((r) => (done = r));
    for (let i = 0; i < N; i++) {
      const index = i;
      const waiter: Waiter = {
        deliver(body) {
          times[index] = performance.now();
          if (answered === 0) firstCpu = cpuMs();
          else if (answered === N - 1) lastCpu = cpuMs();
          const at = body.indexOf(EVENTS) + EVENTS.length;
          lastIds[index] = Number(body.slice(at, body.indexOf(',', at)));
          if (++answered === N) done();
        },
      };
      const q = queues[i];
      if (runtime.queues.poll(q.id, org.organization_id, q.user, lastIds[i], false, waiter) !== null) throw new Error('a poll did not park');
    }
    await call(owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: `round ${round}` });
    await all;
    let first = Infinity;
    let last = 0;
    for (let i = 0; i < N; i++) {
      first = Math.min(first, times[i]);
      last = Math.max(last, times[i]);
    }
    if (round === 0) continue;
    firsts.push(first - durableAt);
    passes.push(last - durableAt);
    firstCpus.push(firstCpu - durableCpu);
    passCpus.push(lastCpu - durableCpu);
  }
  const us = (ms: number) => `${(ms * 1000).toFixed(0)} us`;
  const ms = (x: number) => `${x.toFixed(2)} ms`;
  const line = (label: string, xs: number[], unit: (x: number) => string) => console.log(`  ${label}: median ${unit(median(xs))}, min ${unit(Math.min(...xs))}, max ${unit(Math.max(...xs))}`);
  console.log(`fanout_micro N=${N}, ${ROUNDS} rounds:`);
  line('durable -> first reply, wall', firsts, us);
  line('durable -> first reply, CPU ', firstCpus, us);
  line('durable -> last reply, wall ', passes, ms);
  line('durable -> last reply, CPU  ', passCpus, ms);
  console.log(`  per reply (CPU, median): ${((median(passCpus) * 1000) / N).toFixed(2)} us`);
  runtime.stop();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
