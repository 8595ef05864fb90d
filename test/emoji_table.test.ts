/**
 * Parley's Unicode emoji table is Zulip's: built from the same sources by Zulip's rules
 * (`actors/engines/emoji_table/build.ts`), and used by Markdown, reactions, statuses and the
 * emoji data a client downloads from `server_emoji_data_url`.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildEmojiTable, readEmojiSources, serializeTable, TABLE_DIR, type EmojiTable } from '../actors/engines/emoji_table/build.js';
import { chatFixture } from './helpers.js';

const committed = readFileSync(join(TABLE_DIR, 'table.json'), 'utf8');
const table = JSON.parse(committed) as EmojiTable;
const codeOf = new Map<string, string>();
for (const [code, names] of Object.entries(table.code_to_names)) for (const name of names) codeOf.set(name, code);

t.test('the committed table is the one its sources build (npm run emoji:build)', async (t) => {
  t.equal(serializeTable(buildEmojiTable(readEmojiSources())), committed);
});

t.test("Zulip's names", async (t) => {
  // The names the compatibility report found missing or pointing elsewhere.
  const expected: Record<string, string> = {
    check: '2705', big_smile: '1f604', thumbs_up: '1f44d', like: '1f44d', '+1': '1f44d', football: '26bd', american_football: '1f3c8',
    ok: '1f44c', smile: '1f642', cat: '1f408', dog: '1f415', poop: '1f4a9',
    holiday_tree: '1f384', division: '2797', up: '2b06', kiwi: '1f95d', gold: '1f947', woman_shrugging: '1f937-200d-2640',
    eye_in_speech_bubble: '1f441-200d-1f5e8', hash: '0023-20e3', 'piña_colada': '1f965', pina_colada: '1f965',
  };
  for (const [name, code] of Object.entries(expected)) t.equal(codeOf.get(name), code, `:${name}:`);
  t.equal(codeOf.get('man-girl-girl'), undefined, 'no family (ZWJ) sequences');
  t.equal(codeOf.get('fried_egg'), undefined, 'Zulip calls 1f373 cooking');
  t.equal(codeOf.get('phoenix'), undefined, 'nothing newer than emoji 15.0');
  t.equal(table.code_to_names['1f3fb'], undefined, 'skin tones are not emoji of their own');
  t.equal(table.code_to_names['1f551'], undefined, "only the clock faces Zulip keeps");
});

t.test('every name names one emoji, and the canonical name comes first', async (t) => {
  const seen = new Map<string, string>();
  const clashes: string[] = [];
  const badCodes = Object.keys(table.code_to_names).filter((code) => !/^[0-9a-f]{4,5}(-[0-9a-f]{4,5})*$/.test(code) || code.includes('fe0f'));
  for (const [code, names] of Object.entries(table.code_to_names)) {
    for (const name of names) {
      if (seen.has(name)) clashes.push(`${name}: ${seen.get(name)} and ${code}`);
      seen.set(name, code);
    }
  }
  t.same(badCodes, [], "codes in Zulip's form (hex code points, no U+FE0F)");
  t.same(clashes, [], 'no name twice');
  t.same(table.code_to_names['1f44d'], ['+1', 'thumbs_up', 'like']);
});

t.test('reactions, statuses and the downloadable emoji data use the table', async (t) => {
  const f = await chatFixture();
  const alice = await f.createUser('alice@example.com', 'Alice');
  await f.subscribe(f.owner, 'general', [alice.user_id]);
  const sent = await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'hi' });
  const path = `/api/v1/messages/${sent.json.id}/reactions`;

  t.equal((await f.call(alice, 'POST', path, { emoji_name: 'thumbs_up' })).status, 200, 'by an alias alone');
  const reactions = (await f.call(alice, 'GET', `/api/v1/messages/${sent.json.id}`)).json.message.reactions;
  t.match(reactions, [{ emoji_name: 'thumbs_up', emoji_code: '1f44d', reaction_type: 'unicode_emoji' }]);
  t.equal((await f.call(f.owner, 'POST', path, { emoji_name: 'like', emoji_code: '1f44d', reaction_type: 'unicode_emoji' })).status, 200, 'a vote');
  const both = (await f.call(alice, 'GET', `/api/v1/messages/${sent.json.id}`)).json.message.reactions;
  t.equal(both[1].emoji_name, 'thumbs_up', "a vote takes the first reaction's name");
  const mismatch = await f.call(alice, 'POST', path, { emoji_name: 'smile', emoji_code: '1f600', reaction_type: 'unicode_emoji' });
  t.same([mismatch.status, mismatch.json.msg], [400, 'Invalid emoji name.'], 'name and code must agree, as in Zulip');
  const badCode = await f.call(alice, 'POST', path, { emoji_name: 'smile', emoji_code: '1f3fb', reaction_type: 'unicode_emoji' });
  t.same([badCode.status, badCode.json.msg], [400, 'Invalid emoji code.']);
  const unknown = await f.call(alice, 'POST', path, { emoji_name: 'fried_egg' });
  t.same([unknown.status, unknown.json.msg], [400, "Emoji 'fried_egg' does not exist"]);
  t.equal((await f.call(alice, 'POST', path, { emoji_name: 'football', emoji_code: '26bd' })).status, 200, 'by name and code, the type implied');

  const status = await f.call(alice, 'POST', '/api/v1/users/me/status', { emoji_name: 'big_smile' });
  t.equal(status.status, 200, status.body);

  const reg = await f.call(alice, 'POST', '/api/v1/register', { fetch_event_types: JSON.stringify(['realm']) });
  const url = new URL(reg.json.server_emoji_data_url as string);
  t.match(url.pathname, /^\/static\/generated\/emoji\/emoji_api\.[0-9a-f]{16}\.json$/);
  const data = await f.call(null, 'GET', url.pathname);
  t.equal(data.status, 200);
  t.match(data.headers['cache-control'], /immutable/);
  t.same(data.json, { code_to_names: table.code_to_names }, 'the whole table, canonical names first');
});

t.test("emoticons become emoji for a sender who turned on translate_emoticons", async (t) => {
  const f = await chatFixture();
  const alice = await f.createUser('alice@example.com', 'Alice');
  await f.subscribe(f.owner, 'general', [alice.user_id]);
  const send = async (content: string): Promise<string> => {
    const sent = await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content });
    return (await f.call(alice, 'GET', `/api/v1/messages/${sent.json.id}`)).json.message.content;
  };
  t.equal(await send('thanks :)'), '<p>thanks :)</p>', 'off by default');
  t.equal((await f.call(alice, 'PATCH', '/api/v1/settings', { translate_emoticons: true })).status, 200);
  const smile = '<span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span>';
  t.equal(await send('thanks :)'), `<p>thanks ${smile}</p>`);
  t.equal(await send('a:) b'), '<p>a:) b</p>', 'only between terminal symbols');
  t.equal(await send('**x**:)'), '<p><strong>x</strong>:)</p>', 'not right after other markup');
  t.equal((await f.call(alice, 'POST', '/api/v1/messages/render', { content: ':D' })).json.rendered,
    '<p><span aria-label="grinning" class="emoji emoji-1f600" role="img" title="grinning">:grinning:</span></p>', 'previews render as the caller would send');
  t.equal((await f.call(f.owner, 'POST', '/api/v1/messages/render', { content: ':D' })).json.rendered, '<p>:D</p>', "another user's setting is theirs");

  const sent = await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'x' });
  t.equal((await f.call(f.owner, 'PATCH', `/api/v1/messages/${sent.json.id}`, { content: 'ok :)' })).status, 200);
  t.equal((await f.call(f.owner, 'GET', `/api/v1/messages/${sent.json.id}`)).json.message.content, '<p>ok :)</p>', "an edit renders with the sender's setting");
});
