/**
 * The columnar message table and the id map against the `Map`s they replace: random
 * operations applied to both give the same answers, records come back exactly as they
 * went in (optional fields, odd values), and a view of the ids taken before a change
 * stays as it was.
 */
import t from 'tap';
import { MessageTable } from '../actors/shared/message_table.js';
import { IdMap } from '../actors/shared/id_map.js';
import type { StoredMessage } from '../actors/shared/types.js';

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function channelMessage(id: number, rnd: () => number): StoredMessage {
  const m: StoredMessage = {
    id, sender_id: 1 + Math.floor(rnd() * 5), timestamp: 1_700_000_000 + id, client: rnd() < 0.5 ? 'website' : 'ZulipMobile', stream_id: 3,
    topic: `topic ${Math.floor(rnd() * 4)}`, dm_user_ids: null, recipient_id: 12, has: Math.floor(rnd() * 4), body: id * 1000 + 7,
  };
  if (rnd() < 0.2) m.reactions = [{ emoji_name: 'smile', emoji_code: '1f604', reaction_type: 'unicode_emoji', user_id: 2 }];
  if (rnd() < 0.1) m.last_edit_timestamp = m.timestamp + 60;
  if (rnd() < 0.05) m.received_by = [1, 4];
  return m;
}

t.test('a table answers as a Map of the same records does, through random puts and removals', async (t) => {
  const rnd = random(7);
  const table = new MessageTable();
  const model = new Map<number, StoredMessage>();
  for (let round = 0; round < 3000; round++) {
    const r = rnd();
    const top = model.size === 0 ? 0 : Math.max(...model.keys());
    if (r < 0.55) {
      const m = channelMessage(top + 1 + Math.floor(rnd() * 3), rnd);
      table.set(m.id, m);
      model.set(m.id, m);
    } else if (r < 0.7) {
      // Into the middle, or over a record held: a move in, an edit.
      const batch = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => channelMessage(1 + Math.floor(rnd() * (top + 1)), rnd));
      table.setMany(batch);
      for (const m of batch) model.set(m.id, m);
    } else if (r < 0.85 && model.size > 0) {
      const ids = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => 1 + Math.floor(rnd() * top));
      const went = table.deleteMany(ids);
      const expected = new Set(ids.filter((id) => model.has(id))).size;
      if (went !== expected) t.fail(`deleteMany(${ids}) answered ${went}, not ${expected}`);
      for (const id of ids) model.delete(id);
    } else if (model.size > 0) {
      const id = [...model.keys()][Math.floor(rnd() * model.size)];
      table.setBody(id, 99);
      model.set(id, { ...model.get(id)!, body: 99 });
    }
  }
  const ids = [...model.keys()].sort((a, b) => a - b);
  t.same([...table.ids], ids, 'ids ascending');
  t.equal(table.size, model.size);
  t.equal(table.lastId, ids[ids.length - 1]);
  t.strictSame(ids.map((id) => table.get(id)), ids.map((id) => model.get(id)), 'every record by id');
  t.same(ids.map((id) => table.bodyOf(id)), ids.map((id) => model.get(id)!.body), 'every body locator by id');
  t.same(ids.map((id) => table.receivedBy(id)), ids.map((id) => model.get(id)!.received_by), 'holders of moved messages');
  t.equal(table.get(ids[ids.length - 1] + 1), undefined);
  t.equal(table.has(0), false);
  t.strictSame([...table.values()], ids.map((id) => model.get(id)));
  t.same([...table.bodyLocators()], ids.map((id) => model.get(id)!.body));
  t.same(ids.map((_, i) => table.topicAt(i)), ids.map((id) => model.get(id)!.topic), 'topics by row');
  t.same(ids.map((_, i) => table.senderAt(i)), ids.map((id) => model.get(id)!.sender_id), 'senders by row');
});

t.test('records come back exactly: absent has, direct messages, and values no column holds', async (t) => {
  const table = new MessageTable();
  const dm: StoredMessage = { id: 5, sender_id: 1, timestamp: 10, client: 'test', stream_id: null, topic: '', dm_user_ids: [1, 2, 9], recipient_id: 40, has: undefined, body: 3 };
  const odd: StoredMessage = { id: 6, sender_id: 1, timestamp: 10.5, client: 'test', stream_id: null, topic: '', dm_user_ids: [1, 2], recipient_id: 41, has: 1, body: 4, kind: 'resolve_topic_notification' };
  const big: StoredMessage = { ...dm, id: 7, has: 200, body: 2 ** 40 + 3 };
  for (const m of [dm, odd, big]) table.set(m.id, m);
  t.strictSame(table.get(5), dm);
  t.ok('has' in table.get(5)!, 'has is a key even when undefined, as stored records have it');
  t.strictSame(table.get(6), odd, 'a fractional time is kept');
  t.strictSame(table.get(7), big, 'has bits beyond the column, a locator beyond 32 bits');
  t.throws(() => table.get(5)!.dm_user_ids!.push(3), 'participants shared by a conversation cannot be changed through one record');
  t.strictSame(table.get(5), dm);
  table.delete(6);
  t.same([...table.ids], [5, 7]);
});

t.test('a view of the ids taken before a change stays as it was', async (t) => {
  const table = new MessageTable();
  const rnd = random(3);
  for (let id = 10; id <= 100; id += 10) table.set(id, channelMessage(id, rnd));
  const before = table.ids;
  table.delete(50);
  table.setMany([channelMessage(15, rnd)]);
  for (let id = 110; id < 400; id++) table.set(id, channelMessage(id, rnd));
  t.same([...before], [10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 'removal, insertion and growth leave an old view alone');
  t.same([...table.ids].slice(0, 10), [10, 15, 20, 30, 40, 60, 70, 80, 90, 100]);
});

t.test('an id map answers as a Map does, through appends, inserts out of order, overwrites and removals', async (t) => {
  const rnd = random(11);
  const map = new IdMap();
  const model = new Map<number, number>();
  let next = 1;
  for (let round = 0; round < 20000; round++) {
    const r = rnd();
    if (r < 0.5) {
      model.set(next, next % 7);
      map.set(next, next % 7);
      next += 1 + Math.floor(rnd() * 2);
    } else if (r < 0.75) {
      // A restore reads channels one after another: ids far below the top.
      const id = 1 + Math.floor(rnd() * next * 2);
      model.set(id, 3);
      map.set(id, 3);
    } else {
      const id = 1 + Math.floor(rnd() * next);
      const [got, want] = [map.delete(id), model.delete(id)];
      if (got !== want) t.fail(`delete ${id} answered ${got}, not ${want}`);
    }
  }
  map.set(2 ** 33, 1);
  model.set(2 ** 33, 1);
  map.set(12, 2 ** 32 + 5);
  model.set(12, 2 ** 32 + 5);
  t.equal(map.size, model.size);
  for (let id = 0; id <= next * 2 + 2; id++) {
    if (map.get(id) !== model.get(id)) t.fail(`id ${id}: ${map.get(id)} vs ${model.get(id)}`);
  }
  t.equal(map.get(2 ** 33), 1);
  t.equal(map.get(12), 2 ** 32 + 5);
  t.same([...map.entries()], [...model.entries()].sort((a, b) => a[0] - b[0]));
});
