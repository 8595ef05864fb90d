/**
 * Workflows that span several decisions, killed in the middle: a real server process
 * deleting a topic (several batches, the last of which also resets the topic's visibility
 * policies) is SIGKILLed at a random moment; after a restart the topic is either still
 * there with its policies, or gone with them, never gone with its policies left; and the
 * client's repeated request finishes it. And a user's deactivation with message deletions
 * (a durable job of the organization), killed in the same way: the user is still active
 * with every message, or deactivated, and then the restarted server finishes the job.
 * Several seeded rounds; the seed is printed.
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

/** Channels of each kind, and messages each of their members sends to each, per deactivation round. */
const PUBLIC_CHANNELS = 3;
const PRIVATE_CHANNELS = 2;
const PER_CHANNEL = 12;
const DIRECT = 12;

t.test(`DELETE /users/{id} with deletion actions killed at random moments: never half done, the restarted server finishes it (seed ${seed})`, async (t) => {
  t.comment(`seed ${seed}; rerun with PARLEY_WORKFLOW_SEED=${seed}`);
  const random = prng(seed + 1);
  const dir = mkdtempSync(join(tmpdir(), 'parley-workflow-deact-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const env = { PARLEY_DATA_DIR: dir, PARLEY_FSYNC: 'always', PARLEY_RATE_LIMIT: '0' };
  let server = await startServerProcess(env);
  t.teardown(() => void server.child.kill('SIGKILL'));
  const owner = basic('owner@localhost', await apiKeyOf(server));
  const ok = async (who: string, method: string, path: string, params: Record<string, string> = {}): Promise<any> => {
    const r = await api(server.base, who, method, path, params);
    if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json;
  };
  const member = async (name: string): Promise<{ id: number; auth: string }> => {
    const email = `${name}@localhost`;
    const { user_id } = await ok(owner, 'POST', '/api/v1/users', { email, password: `${name}-password-1`, full_name: name });
    const { api_key } = await ok('', 'POST', '/api/v1/fetch_api_key', { username: email, password: `${name}-password-1` });
    return { id: user_id as number, auth: basic(email, api_key as string) };
  };
  const carol = await member('carol');
  /** The ids of every message `who` can read now. */
  const readable = async (who: string): Promise<Set<number>> => {
    const got = await ok(who, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: '5000', num_after: '0' });
    return new Set((got.messages as Array<{ id: number }>).map((m) => m.id));
  };

  const outcomes: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const bob = await member(`bob${round}`);
    const bot = await ok(bob.auth, 'POST', '/api/v1/bots', { full_name: `Bob ${round} Bot`, short_name: `bob${round}bot` });
    const botEmail = (await ok(owner, 'GET', `/api/v1/users/${bot.user_id}`)).user.email as string;
    const botAuth = basic(botEmail, bot.api_key as string);
    const everyone = JSON.stringify(['owner@localhost', `bob${round}@localhost`, 'carol@localhost', botEmail]);
    const publicNames = Array.from({ length: PUBLIC_CHANNELS }, (_, i) => `open ${round}.${i}`);
    const privateNames = Array.from({ length: PRIVATE_CHANNELS }, (_, i) => `closed ${round}.${i}`);
    await ok(owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify(publicNames.map((name) => ({ name }))), principals: everyone });
    await ok(owner, 'POST', '/api/v1/users/me/subscriptions', { subscriptions: JSON.stringify(privateNames.map((name) => ({ name }))), principals: everyone, invite_only: 'true' });

    // Whose, and of which kind, each message of the round is.
    const kinds = new Map<number, { doomed: boolean; kind: 'public' | 'private' | 'direct' }>();
    const send = async (who: string, doomed: boolean, kind: 'public' | 'private' | 'direct', params: Record<string, string>): Promise<void> => {
      kinds.set((await ok(who, 'POST', '/api/v1/messages', params)).id as number, { doomed, kind });
    };
    const sends: Array<() => Promise<void>> = [];
    for (const [names, kind] of [[publicNames, 'public'], [privateNames, 'private']] as const) {
      for (const to of names) {
        for (let i = 0; i < PER_CHANNEL; i++) {
          sends.push(() => send(bob.auth, true, kind, { type: 'stream', to, topic: `t${i % 3}`, content: `bob ${i}` }));
          if (i % 3 === 0) sends.push(() => send(botAuth, true, kind, { type: 'stream', to, topic: 'bot', content: `bot ${i}` }));
          if (i % 2 === 0) sends.push(() => send(carol.auth, false, kind, { type: 'stream', to, topic: `t${i % 3}`, content: `carol ${i}` }));
        }
      }
    }
    for (let i = 0; i < DIRECT; i++) {
      sends.push(() => send(bob.auth, true, 'direct', { type: 'direct', to: JSON.stringify([carol.id]), content: `bob to carol ${i}` }));
      if (i % 2 === 0) sends.push(() => send(carol.auth, false, 'direct', { type: 'direct', to: JSON.stringify([bob.id]), content: `carol to bob ${i}` }));
    }
    for (let i = 0; i < sends.length; i += 10) await Promise.all(sends.slice(i, i + 10).map((s) => s()));

    // Some kinds asked for, at least one; and sometimes the profile too.
    const asked = { public: random() < 0.7, private: random() < 0.6, direct: random() < 0.6 };
    if (!asked.public && !asked.private && !asked.direct) asked.public = true;
    const actions = { delete_profile: random() < 0.5, delete_public_channel_messages: asked.public, delete_private_channel_messages: asked.private, delete_direct_messages: asked.direct };
    const doomed = [...kinds.values()].filter((k) => k.doomed && asked[k.kind]).length;
    // The kill comes after Carol (who holds every doomed message) has been told of a random
    // number of the deletions (none a quarter of the time), and a few milliseconds more.
    const { queue_id, last_event_id } = await ok(carol.auth, 'POST', '/api/v1/register', { event_types: JSON.stringify(['delete_message']) });
    const killAfter = random() < 0.25 ? 0 : 1 + Math.floor(random() * doomed);
    const deleting = api(server.base, owner, 'DELETE', `/api/v1/users/${bob.id}`, { actions: JSON.stringify(actions) }).catch(() => null);
    let told = 0;
    let last = last_event_id as number;
    while (told < killAfter) {
      const polled = await Promise.race([api(server.base, carol.auth, 'GET', '/api/v1/events', { queue_id, last_event_id: String(last) }).catch(() => null), deleting.then(() => null)]);
      if (polled?.status !== 200) break;
      for (const e of polled.json.events as Array<{ id: number; type: string }>) {
        last = e.id;
        if (e.type === 'delete_message') told++;
      }
    }
    // Killed at once after nothing told: the request may not have taken effect yet.
    await new Promise((r) => setTimeout(r, Math.floor(random() * (killAfter === 0 ? 3 : 8))));
    server.child.kill('SIGKILL');
    await server.exited;
    const answered = (await deleting)?.status === 200;
    server = await startServerProcess(env);

    const active = (await ok(owner, 'GET', `/api/v1/users/${bob.id}`)).user.is_active as boolean;
    // The job the kill cut short, as the restarted server found it.
    const resumed = /"event":"deletion_job.resumed"[^\n]*"channels":(\d+)/.exec(server.stderr());
    const present = async (): Promise<Set<number>> => {
      const seen = new Set([...await readable(owner), ...await readable(carol.auth)]);
      return new Set([...kinds.keys()].filter((id) => seen.has(id)));
    };
    let left = await present();
    const doomedLeftAtStart = [...kinds].filter(([id, k]) => k.doomed && asked[k.kind] && left.has(id)).length;
    if (active) {
      t.notOk(answered, `round ${round}: the request was not answered`);
      t.notOk(resumed, `round ${round}: no job to resume`);
      t.equal(left.size, kinds.size, `round ${round}: still active, and every message is still there`);
    } else {
      // Deactivated: the job is recorded with it, and the restarted server finishes it.
      if (answered) t.notOk(resumed, `round ${round}: answered, so nothing left to resume`);
      const end = Date.now() + 10000;
      while ([...kinds].some(([id, k]) => k.doomed && asked[k.kind] && left.has(id)) && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 50));
        left = await present();
      }
      const wrong = [...kinds].filter(([id, k]) => left.has(id) === (k.doomed && asked[k.kind]));
      t.same(wrong, [], `round ${round}: every message of the kinds asked for is gone, and only those`);
      const bobNow = (await ok(owner, 'GET', `/api/v1/users/${bob.id}`)).user;
      if (actions.delete_profile) t.equal(bobNow.full_name, `Deleted User ${bob.id}`, `round ${round}: the profile went with the deactivation`);
      t.equal((await ok(owner, 'GET', `/api/v1/users/${bot.user_id}`)).user.is_active, false, `round ${round}: the bot with its owner`);
    }
    outcomes.push(`round ${round}: ${active ? 'still active' : 'deactivated'}${answered ? ', answered' : ''}${resumed ? `, job resumed with ${resumed[1]} channels to go` : ''}, ${doomedLeftAtStart} of ${doomed} doomed messages left at first look, killed after ${told} told (${Object.entries(asked).filter(([, v]) => v).map(([k]) => k).join('+')})`);
    if (active) {
      // The request never took effect: asked again, it is done in full.
      await ok(owner, 'DELETE', `/api/v1/users/${bob.id}`, { actions: JSON.stringify(actions) });
      const after = await present();
      t.same([...kinds].filter(([id, k]) => after.has(id) === (k.doomed && asked[k.kind])), [], `round ${round}: the repeated request does it all`);
    }
  }
  t.comment(outcomes.join('; '));
});
