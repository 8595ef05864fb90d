/**
 * Workflows that span several decisions, killed in the middle: a real server process
 * deleting a topic (several batches, the last of which also resets the topic's visibility
 * policies) is SIGKILLed at a random moment; after a restart the topic is either still
 * there with its policies, or gone with them, never gone with its policies left; and the
 * client's repeated request finishes it. Several seeded rounds; the seed is printed.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prng } from './prng.js';
import { processApi as api, startServerProcess, type ServerProcess } from './server_process.js';

const seed = Number(process.env.PARLEY_WORKFLOW_SEED ?? Date.now() % 100000);
const ROUNDS = 3;
/** Three batches of `TOPIC_DELETION_BATCH` (100), the last one partial. */
const MESSAGES = 250;

const basic = (email: string, key: string): string => 'Basic ' + Buffer.from(`${email}:${key}`).toString('base64');

async function apiKeyOf(server: ServerProcess): Promise<string> {
  const end = Date.now() + 10000;
  while (!/API key:\s+\S+/.test(server.stdout())) {
    if (Date.now() > end) throw new Error('no API key printed');
    await new Promise((r) => setTimeout(r, 20));
  }
  return /API key:\s+(\S+)/.exec(server.stdout())![1];
}

t.test(`delete_topic killed at random moments: never deleted with stale policies (seed ${seed})`, async (t) => {
  t.comment(`seed ${seed}; rerun with PARLEY_WORKFLOW_SEED=${seed}`);
  const random = prng(seed);
  const dir = mkdtempSync(join(tmpdir(), 'parley-workflow-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const env = { PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'always', PARLEY_RATE_LIMIT: '0' };
  let server = await startServerProcess(env);
  t.teardown(() => void server.child.kill('SIGKILL'));
  const owner = basic('owner@localhost', await apiKeyOf(server));
  t.equal((await api(server.base, owner, 'POST', '/api/v1/users', { email: 'bob@localhost', password: 'bob-password-1', full_name: 'Bob' })).status, 200);
  const bobKey = (await api(server.base, '', 'POST', '/api/v1/fetch_api_key', { username: 'bob@localhost', password: 'bob-password-1' })).json.api_key as string;
  const bob = basic('bob@localhost', bobKey);
  const created = await api(server.base, owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: 'general' }]), principals: JSON.stringify(['owner@localhost', 'bob@localhost']) });
  t.equal(created.status, 200);
  const streamId = (await api(server.base, owner, 'GET', '/api/v1/get_stream_id', { stream: 'general' })).json.stream_id as number;

  const countIn = async (topic: string): Promise<number> => {
    const narrow = JSON.stringify([{ operator: 'channel', operand: 'general' }, { operator: 'topic', operand: topic }]);
    const got = await api(server.base, owner, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: '1000', num_after: '0', narrow });
    return (got.json.messages as unknown[]).length;
  };
  const policies = async (topic: string): Promise<number> => {
    let n = 0;
    for (const who of [owner, bob]) {
      const reg = await api(server.base, who, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['user_topic']), event_types: JSON.stringify(['heartbeat']) });
      n += (reg.json.user_topics as Array<{ topic_name: string }>).filter((u) => u.topic_name === topic).length;
    }
    return n;
  };

  const outcomes: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const topic = `doomed ${round}`;
    for (let sent = 0; sent < MESSAGES; sent += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, i) => api(server.base, owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic, content: `m ${sent + i}` })));
    }
    t.equal((await api(server.base, owner, 'POST', '/api/v1/user_topics', { stream_id: String(streamId), topic, visibility_policy: '3' })).status, 200);
    t.equal((await api(server.base, bob, 'POST', '/api/v1/user_topics', { stream_id: String(streamId), topic, visibility_policy: '1' })).status, 200);
    t.equal(await policies(topic), 2, `round ${round}: two policies name the topic`);

    const deleting = api(server.base, owner, 'POST', `/api/v1/streams/${streamId}/delete_topic`, { topic_name: topic }).catch(() => null);
    await new Promise((r) => setTimeout(r, Math.floor(random() * 60)));
    server.child.kill('SIGKILL');
    await server.exited;
    await deleting;
    server = await startServerProcess(env);

    const left = await countIn(topic);
    const kept = await policies(topic);
    outcomes.push(`round ${round}: ${left} of ${MESSAGES} left, ${kept} policies`);
    t.ok(left % 100 === MESSAGES % 100 || left === 0, `round ${round}: whole batches went (${left} left)`);
    if (left > 0) t.equal(kept, 2, `round ${round}: the topic is still there, and so are its policies`);
    else t.equal(kept, 0, `round ${round}: the topic is gone, and its policies with it`);

    const again = await api(server.base, owner, 'POST', `/api/v1/streams/${streamId}/delete_topic`, { topic_name: topic });
    t.same([again.status, again.json.complete], [200, true], `round ${round}: the repeated request finishes`);
    t.equal(await countIn(topic), 0);
    t.equal(await policies(topic), 0);
  }
  t.comment(outcomes.join('; '));
});
