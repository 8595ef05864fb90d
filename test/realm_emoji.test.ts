/**
 * Custom emoji: uploading an image under a name (who may, Zulip's name rules, images
 * only), listing, deactivating (author or administrator), `realm_emoji` events
 * converging with `/register`, Markdown and reactions using them, the image served
 * without credentials, and the image file surviving the upload store's collection.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { basicAuth, chatFixture, type ChatFixture, type Credentials, injectChecked } from './helpers.js';
import { register, verifyState } from './client_model.js';
import { collectUploads } from '../src/uploads/collect.js';
import { SYSTEM_GROUPS } from '../actors/rules/group_settings.js';

const BOUNDARY = 'parley-emoji-boundary';
/** The smallest PNG there is: its signature, then bytes that need not be a valid image here. */
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('IHDR-and-the-rest')]);

function uploadEmoji(f: ChatFixture, who: Credentials, name: string, data: Buffer, filename = 'e.png') {
  const body = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: image/png\r\n\r\n`),
    data,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
  return injectChecked(f.app, { method: 'POST', url: `/api/v1/realm/emoji/${encodeURIComponent(name)}`, headers: { authorization: basicAuth(who), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body });
}

async function fixture() {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-emoji-'));
  const f = await chatFixture({ config: { dataDir } });
  return { f, dataDir };
}

t.test('uploading: who may, the name rules, images only; listing; the image served without credentials', async (t) => {
  const { f, dataDir } = await fixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const added = await uploadEmoji(f, alice, 'Party Parrot', PNG);
  t.equal(added.status, 200, added.body);
  const list = (await f.call(alice, 'GET', '/api/v1/realm/emoji')).json.emoji;
  t.same(Object.values(list), [{ id: '1', name: 'party_parrot', source_url: '/user_avatars/1/emoji/images/1.png', still_url: null, deactivated: false, author_id: alice.user_id }], 'spaces become underscores, letters lower case');

  const bad = async (who: Credentials, name: string, data: Buffer, msg: string) => {
    const r = await uploadEmoji(f, who, name, data);
    t.same([r.status, r.json.msg], [400, msg], msg);
  };
  await bad(alice, 'party_parrot', PNG, 'A custom emoji with this name already exists.');
  await bad(alice, 'bad!name', PNG, 'Emoji names must contain only lowercase alphanumeric characters, underscores, and dashes.');
  await bad(alice, 'trailing-', PNG, 'Emoji names must end with either a letter or digit.');
  await bad(alice, 'smile', PNG, 'Only administrators can override default emoji.');
  await bad(alice, 'not_an_image', Buffer.from('<html><script>alert(1)</script></html>'), 'Invalid image format');
  t.equal((await uploadEmoji(f, f.owner, 'smile', PNG)).status, 200, 'an administrator may override a default emoji');
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { can_add_custom_emoji_group: JSON.stringify({ new: SYSTEM_GROUPS.administrators }) })).status, 200);
  await bad(alice, 'mine', PNG, 'Insufficient permission');

  const image = await injectChecked(f.app, { method: 'GET', url: '/user_avatars/1/emoji/images/1.png' });
  t.equal(image.status, 200, 'no credentials needed');
  t.equal(image.headers['content-type'], 'image/png');
  t.equal(image.headers['x-content-type-options'], 'nosniff');
  t.same(Buffer.from(image.body, 'latin1').subarray(0, 8), PNG.subarray(0, 8));
  t.equal((await injectChecked(f.app, { method: 'GET', url: '/user_avatars/2/emoji/images/1.png' })).status, 404, "another organization's path is nothing here");
  t.equal((await injectChecked(f.app, { method: 'GET', url: '/user_avatars/1/emoji/images/9.png' })).status, 404);

  await collectUploads(f.runtime, dataDir);
  const kept = await injectChecked(f.app, { method: 'GET', url: '/user_avatars/1/emoji/images/1.png' });
  t.same([kept.status, Buffer.from(kept.body, 'latin1').equals(Buffer.from(image.body, 'latin1'))], [200, true], 'the collector keeps an image an emoji names');
});

t.test('Markdown and reactions use custom emoji; deactivation by its author or an administrator; events converge', async (t) => {
  const { f } = await fixture();
  t.teardown(f.stop);
  const alice = await f.createUser('alice@example.com', 'Alice');
  const bob = await f.createUser('bob@example.com', 'Bob');
  const reg = await register(f, bob, ['realm_emoji']);
  t.same(reg.realm_emoji, {});
  t.equal((await uploadEmoji(f, alice, 'parleybird', PNG)).status, 200);
  await f.subscribe(f.owner, 'general', [alice.user_id, bob.user_id]);
  const sent = await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: 'hi :parleybird:' });
  t.equal(sent.status, 200, sent.body);
  t.equal((await f.call(bob, 'GET', `/api/v1/messages/${sent.json.id}`)).json.message.content, '<p>hi <img alt=":parleybird:" class="emoji" src="/user_avatars/1/emoji/images/1.png" title="parleybird"></p>');
  const react = await f.call(bob, 'POST', `/api/v1/messages/${sent.json.id}/reactions`, { emoji_name: 'parleybird' });
  t.equal(react.status, 200, react.body);
  t.match((await f.call(bob, 'GET', `/api/v1/messages/${sent.json.id}`)).json.message.reactions, [{ emoji_name: 'parleybird', emoji_code: '1', reaction_type: 'realm_emoji', user_id: bob.user_id }]);
  const wrong = await f.call(bob, 'POST', `/api/v1/messages/${sent.json.id}/reactions`, { emoji_name: 'other', emoji_code: '1', reaction_type: 'realm_emoji' });
  t.same(wrong.json.msg, 'Reaction already exists.', "Zulip looks for the caller's own reaction with the code first");
  const vote = await f.call(alice, 'POST', `/api/v1/messages/${sent.json.id}/reactions`, { emoji_name: 'other', emoji_code: '1', reaction_type: 'realm_emoji' });
  t.equal(vote.status, 200, 'a reaction with an emoji already chosen is a vote, not checked');
  t.match((await f.call(bob, 'GET', `/api/v1/messages/${sent.json.id}`)).json.message.reactions[1], { emoji_name: 'parleybird', user_id: alice.user_id }, 'the vote takes the first name');
  t.equal((await f.call(alice, 'DELETE', `/api/v1/messages/${sent.json.id}/reactions`, { emoji_code: '1', reaction_type: 'realm_emoji' })).status, 200);

  const refused = await f.call(bob, 'DELETE', '/api/v1/realm/emoji/parleybird');
  t.same([refused.status, refused.json.code, refused.json.msg], [400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator or emoji author']);
  t.equal((await f.call(alice, 'DELETE', '/api/v1/realm/emoji/parleybird')).status, 200, 'its author deactivates it');
  const missing = await f.call(alice, 'DELETE', '/api/v1/realm/emoji/parleybird');
  t.same([missing.status, missing.json.code, missing.json.msg], [404, 'BAD_REQUEST', "Emoji 'parleybird' does not exist"]);
  t.equal((await f.call(bob, 'DELETE', `/api/v1/messages/${sent.json.id}/reactions`, { emoji_name: 'parleybird' })).status, 200, 'a reaction with a deactivated emoji can still be taken back');
  const later = await f.call(alice, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content: ':parleybird:' });
  t.equal((await f.call(bob, 'GET', `/api/v1/messages/${later.json.id}`)).json.message.content, '<p>:parleybird:</p>', 'a deactivated emoji no longer renders');
  t.equal((await f.call(bob, 'POST', `/api/v1/messages/${sent.json.id}/reactions`, { emoji_name: 'x', emoji_code: '1', reaction_type: 'realm_emoji' })).json.msg, 'Invalid custom emoji name.');
  t.equal((await f.call(bob, 'POST', `/api/v1/messages/${sent.json.id}/reactions`, { emoji_name: 'parleybird', emoji_code: '1', reaction_type: 'realm_emoji' })).json.msg, 'This custom emoji has been deactivated.');
  t.equal((await f.call(bob, 'POST', `/api/v1/messages/${sent.json.id}/reactions`, { emoji_name: 'x', emoji_code: '99', reaction_type: 'realm_emoji' })).json.msg, 'Invalid custom emoji.');
  t.equal((await uploadEmoji(f, bob, 'parleybird', PNG)).status, 200, 'the name is free again');

  await verifyState(t, f, bob, reg, ['realm_emoji'], ['realm_emoji']);
  t.same(Object.values((await register(f, bob, ['realm_emoji'])).realm_emoji).map((e: any) => [e.name, e.deactivated]), [['parleybird', true], ['parleybird', false]]);
});
