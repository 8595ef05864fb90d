/**
 * `has:` narrows (Zulip's `by_has`): `link`, `image`, `attachment` and `reaction`, negated
 * too, in `GET /messages`, `GET /messages/matches_narrow` and `POST /messages/flags/narrow`;
 * refused in a queue's narrow, as Zulip's `check_narrow_for_events` refuses them. The
 * bits follow edits, and a data directory written before they existed answers alike.
 */
import t from 'tap';
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { basicAuth, chatFixture, openTestStore, storeClient, type ChatFixture, type Credentials, injectChecked } from './helpers.js';
import { fixturePath } from './paths.js';

const BOUNDARY = 'has-boundary';

async function upload(f: ChatFixture, who: Credentials, filename: string): Promise<string> {
  const body = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--${BOUNDARY}--\r\n`);
  const res = await injectChecked(f.app, { method: 'POST', url: '/api/v1/user_uploads', headers: { host: '127.0.0.1', authorization: basicAuth(who), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body });
  if (res.status !== 200) throw new Error(res.body);
  return res.json.url as string;
}

const has = (operand: string, negated = false) => [{ operator: 'has', operand, negated }];

t.test('has: in GET /messages, matches_narrow and flags by narrow, negated too', async (t) => {
  const f = await chatFixture({ config: { dataDir: mkdtempSync(join(tmpdir(), 'parley-has-')) } });
  t.teardown(f.stop);
  const bob = await f.createUser('bob@example.com', 'Bob');
  await f.subscribe(f.owner, 'general', [f.owner.user_id, bob.user_id]);
  const send = async (content: string) => (await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'stream', to: 'general', topic: 't', content })).json.id as number;
  const fileUrl = await upload(f, f.owner, 'notes.txt');
  const ids = {
    plain: await send('just words'),
    link: await send('see https://example.com/page'),
    named: await send('[docs](https://example.com/docs)'),
    channelLink: await send('over in #**general**'),
    image: await send('look https://example.com/cat.PNG'),
    quotedImage: await send('> https://example.com/quoted.gif'),
    attachment: await send(`[notes.txt](${fileUrl})`),
    dm: (await f.call(f.owner, 'POST', '/api/v1/messages', { type: 'direct', to: JSON.stringify([bob.user_id]), content: 'https://example.com/dm.jpg' })).json.id as number,
  };
  t.equal((await f.call(bob, 'POST', `/api/v1/messages/${ids.plain}/reactions`, { emoji_name: 'smile' })).status, 200);
  const all = Object.values(ids).sort((a, b) => a - b);
  const expected: Record<string, number[]> = {
    link: [ids.link, ids.named, ids.channelLink, ids.image, ids.quotedImage, ids.attachment, ids.dm],
    image: [ids.image, ids.dm],
    attachment: [ids.attachment],
    reaction: [ids.plain],
  };
  for (const [operand, want] of Object.entries(expected)) {
    const sorted = [...want].sort((a, b) => a - b);
    const complement = all.filter((id) => !want.includes(id));
    const get = async (negated: boolean) => (await f.call(bob, 'GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 100, narrow: JSON.stringify(has(operand, negated)) })).json.messages.map((m: any) => m.id);
    t.same(await get(false), sorted, `GET /messages has:${operand}`);
    t.same(await get(true), complement, `GET /messages -has:${operand}`);
    const matches = async (negated: boolean) => Object.keys((await f.call(bob, 'GET', '/api/v1/messages/matches_narrow', { msg_ids: JSON.stringify(all), narrow: JSON.stringify(has(operand, negated)) })).json.messages).map(Number);
    t.same(await matches(false), sorted, `matches_narrow has:${operand}`);
    t.same(await matches(true), complement, `matches_narrow -has:${operand}`);
    for (const negated of [false, true]) {
      const r = await f.call(bob, 'POST', '/api/v1/messages/flags/narrow', { anchor: 'oldest', num_before: 0, num_after: 100, narrow: JSON.stringify(has(operand, negated)), op: 'add', flag: 'starred' });
      t.equal(r.status, 200, r.body);
      const starred = (await f.call(bob, 'GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 100, narrow: JSON.stringify([{ operator: 'is', operand: 'starred' }]) })).json.messages.map((m: any) => m.id);
      t.same(starred, negated ? complement : sorted, `flags by narrow ${negated ? '-' : ''}has:${operand} stars exactly those`);
      await f.call(bob, 'POST', '/api/v1/messages/flags', { messages: JSON.stringify(all), op: 'remove', flag: 'starred' });
    }
  }

  // An unknown operand, and the queue's narrow: Zulip's answers.
  let r = await f.call(bob, 'GET', '/api/v1/messages', { anchor: 'newest', num_before: 1, narrow: JSON.stringify(has('video')) });
  t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_NARROW', "Invalid narrow operator: unknown 'has' operand video"]);
  r = await f.call(bob, 'POST', '/api/v1/register', { event_types: JSON.stringify(['message']), narrow: JSON.stringify([['has', 'link']]) });
  t.same([r.status, r.json.code, r.json.msg], [400, 'BAD_REQUEST', 'Operator has not supported.'], 'a queue cannot filter by has:, as in Zulip');
  r = await f.call(bob, 'POST', '/api/v1/register', { event_types: JSON.stringify(['message']), narrow: JSON.stringify([['is', 'followed']]) });
  t.same([r.status, r.json.msg], [400, 'Operand followed not supported.']);

  // Edits recompute the bits; removing the reaction takes has:reaction away.
  await f.call(f.owner, 'PATCH', `/api/v1/messages/${ids.link}`, { content: 'no longer linking' });
  await f.call(f.owner, 'PATCH', `/api/v1/messages/${ids.plain}`, { content: 'now https://example.com/now.webp' });
  await f.call(f.owner, 'PATCH', `/api/v1/messages/${ids.attachment}`, { content: 'file gone' });
  await f.call(bob, 'DELETE', `/api/v1/messages/${ids.plain}/reactions`, { emoji_name: 'smile' });
  const now = async (operand: string) => (await f.call(bob, 'GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 100, narrow: JSON.stringify(has(operand)) })).json.messages.map((m: any) => m.id);
  t.notOk((await now('link')).includes(ids.link), 'an edit that removes the link removes has:link');
  t.ok((await now('link')).includes(ids.plain) && (await now('image')).includes(ids.plain), 'an edit that adds an image link adds has:link and has:image');
  t.same(await now('attachment'), [], 'an edit that stops linking the upload removes has:attachment');
  t.same(await now('reaction'), [], 'no reaction left');
});

t.test('a data directory written before the has bits answers has: from its rendered content', async (t) => {
  const fixture = fixturePath('has-v0');
  const dir = mkdtempSync(join(tmpdir(), 'parley-has-v0-'));
  cpSync(join(fixture, 'store'), dir, { recursive: true });
  const { owner, ids } = JSON.parse(readFileSync(join(fixture, 'credentials.json'), 'utf8'));
  const check = async (api: (method: string, path: string, params?: Record<string, unknown>) => Promise<any>, when: string) => {
    const q = async (operand: string, negated = false) =>
      (await api('GET', '/api/v1/messages', { anchor: 'oldest', num_before: 0, num_after: 100, narrow: JSON.stringify(has(operand, negated)) })).messages.map((m: any) => m.id);
    // Snapshot records (1-4) are restored, log records (5-8) replayed, and the edits (1 and 7) replayed over both.
    t.same(await q('link'), [ids.snapImage, ids.snapDmLink, ids.logLink, ids.logImage, ids.logPlain, ids.logQuotedImage], `${when}: has:link`);
    t.same(await q('image'), [ids.snapImage, ids.logImage, ids.logPlain], `${when}: has:image (a quoted image is not previewed)`);
    t.same(await q('link', true), [ids.snapLink, ids.snapPlain], `${when}: -has:link`);
    t.same(await q('reaction'), [ids.snapPlain], `${when}: has:reaction`);
  };
  let store = openTestStore(dir);
  await check(storeClient(store, owner), 'restored and replayed');
  await store.snapshot();
  await store.close();
  store = openTestStore(dir);
  t.teardown(() => store.close());
  await check(storeClient(store, owner), 'from a snapshot written with the bits');
});
