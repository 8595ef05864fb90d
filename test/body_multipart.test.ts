/**
 * Multipart bodies, read by busboy: fields and files, body fields over the query,
 * invalid UTF-8 wherever text stands, Django's limits on fields and files, malformed
 * bodies, a body in many chunks; and through the chat API, Zulip's 400 for each.
 */
import t from 'tap';
import { decodeMultipart, decodeParams, INVALID_UTF8, MalformedBody, MULTIPART_LIMITS, type UploadedFile } from '../src/http/body.js';
import { chatFixture } from './helpers.js';

const BOUNDARY = 'b0undary-Xy';
const TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

/** One part; `headers` are raw (latin1) so that a test can put any byte in them. */
function part(disposition: string, value: Buffer | string, headers = ''): Buffer {
  return Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; ${disposition}\r\n${headers}\r\n`, 'latin1'), Buffer.from(value), Buffer.from('\r\n')]);
}

function form(...parts: Buffer[]): Buffer {
  return Buffer.concat([...parts, Buffer.from(`--${BOUNDARY}--\r\n`)]);
}

/** The error a decode is refused with, or undefined. */
async function refusal(body: Buffer, type = TYPE): Promise<string | undefined> {
  try {
    await decodeParams(type, body, '');
    return undefined;
  } catch (err) {
    if (!(err instanceof MalformedBody)) throw err;
    return err.message;
  }
}

t.test('text fields and file parts; a body field wins over the query', async (t) => {
  const file = Buffer.from([0xff, 0x00, 0xfe, 0x0d, 0x0a, 0x2d, 0x2d]);
  const body = form(
    part('name="content"', 'caf\u00e9 \u65e5\u672c'),
    part('name="topic"', 'from the body'),
    part('name="file"; filename="dir/caf\xc3\xa9.bin"', file, 'Content-Type: image/png\r\n'),
    part('name="empty"', ''),
  );
  const { values, files } = await decodeParams(TYPE, body, 'topic=from%20the%20query&extra=1');
  t.same(Object.fromEntries(values), { topic: 'from the body', extra: '1', content: 'caf\u00e9 \u65e5\u672c', empty: '' });
  t.equal(files.length, 1);
  t.same({ ...files[0], data: [...files[0].data] }, { field: 'file', filename: 'café.bin', contentType: 'image/png', data: [...file] }, 'a file is bytes, its name without the client\'s path, as Django keeps it');
});

t.test('invalid UTF-8 anywhere text stands is a 400, never U+FFFD', async (t) => {
  const bad = Buffer.from([0x61, 0xff, 0x62]);
  t.equal(await refusal(form(part('name="content"', bad))), INVALID_UTF8, 'in a value');
  t.equal(await refusal(form(part('name="a\xffb"', 'v'))), INVALID_UTF8, 'in a field name (a part header)');
  t.equal(await refusal(form(part('name="file"; filename="\xc0\xaf.txt"', 'x'))), INVALID_UTF8, 'in a filename (a part header)');
  t.equal(await refusal(form(part("name=\"file\"; filename*=UTF-8''%FF.txt", 'x'))), INVALID_UTF8, 'in an RFC 5987 filename');
  t.equal(await refusal(form(part('name="content"', Buffer.from([0xed, 0xa0, 0x80])))), INVALID_UTF8, 'a surrogate');
  t.equal(await refusal(form(part('name="content"', Buffer.from([0xe2, 0x82])))), INVALID_UTF8, 'a truncated sequence');
  t.equal(await refusal(form(part('name="content"', 'fine'), part('name="x"', Buffer.from([0x80])))), INVALID_UTF8, 'in a later part');
  const latin1 = await decodeParams(TYPE, form(part('name="content"', Buffer.from('caf\xe9', 'latin1'), 'Content-Type: text/plain; charset=iso-8859-1\r\n')), '');
  t.equal(latin1.values.get('content'), 'café', 'a part that declares its charset is read in it');
});

t.test('malformed bodies are refused with a clear message', async (t) => {
  t.equal(await refusal(form(part('name="a"', 'v')), 'multipart/form-data'), 'Invalid multipart boundary');
  t.equal(await refusal(Buffer.concat([part('name="a"', 'v'), Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="x"\r\n\r\nunterminated`)])), 'Unterminated multipart body');
  t.equal(await refusal(form(part('filename="f.txt"', 'v'))), 'Multipart part without a name');
  t.equal(await refusal(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="a"\r\nno end of headers`)), 'Malformed multipart part headers');
});

t.test("more fields or files than Django's limits is a 400", async (t) => {
  const fields = Array.from({ length: MULTIPART_LIMITS.fields }, (_, i) => part(`name="f${i}"`, 'v'));
  t.equal((await decodeParams(TYPE, form(...fields), '')).values.size, MULTIPART_LIMITS.fields, 'up to the limit');
  t.equal(await refusal(form(...fields, part('name="one-more"', 'v'))), `Too many fields in a multipart body (at most ${MULTIPART_LIMITS.fields})`);
  const files = Array.from({ length: MULTIPART_LIMITS.files + 1 }, (_, i) => part(`name="f${i}"; filename="${i}.bin"`, 'x'));
  t.equal(await refusal(form(...files)), `Too many files in a multipart body (at most ${MULTIPART_LIMITS.files})`);
});

t.test('a body split across many chunks decodes as the whole', async (t) => {
  const body = form(part('name="content"', 'h\u00e9llo \u65e5\u672c'.repeat(50)), part('name="file"; filename="f.bin"', Buffer.alloc(3000, 0x2d)), part('name="to"', '[1,2]'));
  const decode = async (size: number): Promise<unknown> => {
    const values = new Map<string, string>();
    const files: UploadedFile[] = [];
    const chunks: Buffer[] = [];
    for (let i = 0; i < body.length; i += size) chunks.push(body.subarray(i, i + size));
    await decodeMultipart(TYPE, chunks, values, files);
    return { values: Object.fromEntries(values), files: files.map((f) => ({ ...f, data: f.data.toString('hex') })) };
  };
  const whole = await decode(body.length);
  for (const size of [1, 2, 7, 64, 1000]) t.same(await decode(size), whole, `in chunks of ${size} bytes`);
  const bad = form(part('name="content"', Buffer.from([0xe6, 0x97, 0xa5, 0xe6, 0x97])));
  await t.rejects(decodeMultipart(TYPE, [...bad].map((b) => Buffer.from([b])), new Map(), []), new MalformedBody(INVALID_UTF8), 'invalid UTF-8 split across chunks');
});

t.test("through the chat API: a multipart request is served, a malformed one is Zulip's 400", async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const send = (body: Buffer) => f.call(f.owner, 'POST', '/api/v1/messages', {}, { body, headers: { 'content-type': TYPE } });
  const ok = await send(form(part('name="type"', 'direct'), part('name="to"', JSON.stringify([f.owner.user_id])), part('name="content"', 'multipart h\u00e9llo'), part('name="zz"', '1')));
  t.equal(ok.status, 200, ok.body);
  t.same(ok.json.ignored_parameters_unsupported, ['zz']);
  const bad = await send(form(part('name="type"', 'direct'), part('name="content"', Buffer.from([0xff]))));
  t.equal(bad.status, 400);
  t.strictSame(bad.json, { result: 'error', msg: INVALID_UTF8, code: 'BAD_REQUEST' });
  const many = await send(form(...Array.from({ length: MULTIPART_LIMITS.fields + 1 }, (_, i) => part(`name="f${i}"`, 'v'))));
  t.strictSame(many.json, { result: 'error', msg: `Too many fields in a multipart body (at most ${MULTIPART_LIMITS.fields})`, code: 'BAD_REQUEST' });
  // A long-poll whose parameters arrive in a multipart body still parks, and answers later.
  const reg = await f.runtime.queues.register({ org: 1, user_id: f.owner.user_id, event_types: ['message'], narrow: [], client: 't', lifespan_secs: null, empty_topic_name: false });
  await reg.durable;
  const parked = f.call(f.owner, 'GET', '/api/v1/events', {}, { body: form(part('name="queue_id"', reg.queueId), part('name="last_event_id"', '-1')), headers: { 'content-type': TYPE } });
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal((await send(form(part('name="type"', 'direct'), part('name="to"', JSON.stringify([f.owner.user_id])), part('name="content"', 'wake')))).status, 200);
  const woke = await parked;
  t.equal(woke.status, 200, woke.body);
  t.same(woke.json.events.map((e: { message: { content: string } }) => e.message.content), ['<p>wake</p>']);
});
