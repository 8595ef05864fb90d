/**
 * Video calls: the providers `/register` reports and `PATCH /realm` accepts follow the
 * server settings; Jitsi links name fresh rooms; BigBlueButton links are signed, and
 * joining creates the meeting on a fake BigBlueButton server (127.0.0.1) that checks
 * every checksum the way BigBlueButton does, then redirects to a checksummed join URL.
 */
import t, { type Test } from 'tap';
import { createOrganization } from '../src/bootstrap.js';
import { bbbChecksumValid, closedPort, fakeBbb, type FakeBbb } from './fakes.js';
import { botCredentials, chatFixture, withRole, type ChatFixture } from './helpers.js';

const JITSI = 'https://jitsi.example';

t.test('with nothing configured, only "None" is offered and every provider says why not', async (t) => {
  const f = await chatFixture();
  t.teardown(f.stop);
  const reg = await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['realm'] });
  t.same(reg.json.realm_available_video_chat_providers, { disabled: { name: 'None', id: 0 } });
  t.equal(reg.json.server_jitsi_server_url, null);
  t.equal(reg.json.jitsi_server_url, '', 'the deprecated jitsi_server_url is a string, as Zulip describes it: empty, no server');
  t.equal(reg.json.realm_video_chat_provider, 0);
  const jitsi = await f.call(f.owner, 'POST', '/api/v1/calls/jitsi/create');
  t.match(jitsi, { status: 400, json: { result: 'error', code: 'BAD_REQUEST', msg: 'Jitsi Meet is not configured.' } });
  const zoom = await f.call(f.owner, 'POST', '/api/v1/calls/zoom/create', { is_video_call: false });
  t.match(zoom, { status: 400, json: { code: 'BAD_REQUEST', msg: 'Zoom credentials have not been configured' } });
  const webex = await f.call(f.owner, 'POST', '/api/v1/calls/webex/create');
  t.match(webex, { status: 400, json: { msg: 'Webex credentials have not been configured' } });
  t.match(await f.call(f.owner, 'POST', '/api/v1/calls/skype/create'), { status: 404, json: { code: 'NOT_FOUND' } });
  t.match(await f.call(f.owner, 'GET', '/api/v1/calls/bigbluebutton/create', { meeting_name: 'x' }), { status: 400, json: { msg: 'BigBlueButton is not configured.' } });
  t.match(await f.call(f.owner, 'GET', '/calls/bigbluebutton/join', { bigbluebutton: 'a.b' }), { status: 400, json: { msg: 'BigBlueButton is not configured.' } });
  t.match(await f.call(f.owner, 'PATCH', '/api/v1/realm', { video_chat_provider: 1 }), { status: 400, json: { msg: 'Invalid video_chat_provider 1' } });
  t.match(await f.call(null, 'POST', '/api/v1/calls/jitsi/create'), { status: 401, json: { code: 'UNAUTHORIZED' } });
});

t.test('Jitsi: a fresh 15-digit room on the configured server', async (t) => {
  const f = await chatFixture({ config: { jitsiServerUrl: JITSI } });
  t.teardown(f.stop);
  const reg = await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['realm'] });
  t.same(reg.json.realm_available_video_chat_providers, { disabled: { name: 'None', id: 0 }, jitsi_meet: { name: 'Jitsi Meet', id: 1 } });
  t.equal(reg.json.server_jitsi_server_url, JITSI);
  t.equal(reg.json.jitsi_server_url, JITSI, 'realm_jitsi_server_url || server_jitsi_server_url');
  const member = await f.createUser('m@example.com');
  const a = await f.call(member, 'POST', '/api/v1/calls/jitsi/create');
  const b = await f.call(member, 'POST', '/api/v1/calls/jitsi/create');
  t.match(a.json.url, /^https:\/\/jitsi\.example\/\d{15}$/);
  t.not(a.json.url, b.json.url, 'each call gets its own room');
  const voice = await f.call(member, 'POST', '/api/v1/calls/jitsi/create', { is_video_call: false });
  t.match(voice.json.url, /^https:\/\/jitsi\.example\/\d{15}#config\.startWithVideoMuted=true$/);
});

t.test('PATCH /realm video_chat_provider: the providers the server offers, administrators only', async (t) => {
  const f = await chatFixture({ config: { jitsiServerUrl: JITSI } });
  t.teardown(f.stop);
  const member = await f.createUser('m@example.com');
  t.match(await f.call(member, 'PATCH', '/api/v1/realm', { video_chat_provider: 1 }), { status: 400, json: { code: 'UNAUTHORIZED_PRINCIPAL' } });
  t.match(await f.call(f.owner, 'PATCH', '/api/v1/realm', { video_chat_provider: 4 }), { status: 400, json: { msg: 'Invalid video_chat_provider 4' } });
  t.match(await f.call(f.owner, 'PATCH', '/api/v1/realm', { video_chat_provider: 3 }), { status: 400, json: { msg: 'Invalid video_chat_provider 3' } });
  const reg = await f.call(member, 'POST', '/api/v1/register', { event_types: ['realm'] });
  t.equal((await f.call(f.owner, 'PATCH', '/api/v1/realm', { video_chat_provider: 1 })).status, 200);
  const events = await f.call(member, 'GET', '/api/v1/events', { queue_id: reg.json.queue_id, last_event_id: -1, dont_block: true });
  t.match(events.json.events, [{ type: 'realm', op: 'update', property: 'video_chat_provider', value: 1 }]);
  const again = await f.call(member, 'POST', '/api/v1/register', { fetch_event_types: ['realm'] });
  t.equal(again.json.realm_video_chat_provider, 1);
});

async function bbbFixture(t: Test, secret: string, serverSecret = secret): Promise<{ f: ChatFixture; bbb: FakeBbb }> {
  const bbb = await fakeBbb(serverSecret);
  t.teardown(() => bbb.server.close());
  const f = await chatFixture({ config: { bbbUrl: bbb.url, bbbSecret: secret } });
  t.teardown(f.stop);
  return { f, bbb };
}

function joinPath(url: string): { path: string; signed: string } {
  const u = new URL(url, 'http://x');
  return { path: u.pathname, signed: u.searchParams.get('bigbluebutton')! };
}

t.test('BigBlueButton: a signed link; joining creates the meeting and redirects with valid checksums', async (t) => {
  const { f, bbb } = await bbbFixture(t, 'shared-secret');
  const reg = await f.call(f.owner, 'POST', '/api/v1/register', { fetch_event_types: ['realm'] });
  t.same(reg.json.realm_available_video_chat_providers, { disabled: { name: 'None', id: 0 }, big_blue_button: { name: 'BigBlueButton', id: 4 } });
  t.match(await f.call(f.owner, 'GET', '/api/v1/calls/bigbluebutton/create', {}), { status: 400, json: { code: 'REQUEST_VARIABLE_MISSING' } });
  const created = await f.call(f.owner, 'GET', '/api/v1/calls/bigbluebutton/create', { meeting_name: 'general / standup', voice_only: true });
  t.equal(created.status, 200);
  t.match(created.json.url, /^\/calls\/bigbluebutton\/join\?bigbluebutton=/);
  t.equal(bbb.calls.length, 0, 'creating a link does not contact BigBlueButton');
  const { path, signed } = joinPath(created.json.url);

  const joined = await f.call(f.owner, 'GET', path, { bigbluebutton: signed });
  t.equal(joined.status, 302, joined.body);
  t.equal(bbb.calls.length, 1);
  const create = bbb.calls[0];
  t.equal(create.pathname, '/bigbluebutton/api/create');
  t.ok(bbbChecksumValid(create, 'shared-secret'), 'the create call carries a valid checksum');
  t.equal(create.searchParams.get('name'), 'general / standup');
  t.equal(create.searchParams.get('lockSettingsDisableCam'), 'True');
  t.match(create.searchParams.get('meetingID'), /^parley-\d{12}$/);
  t.match(create.search, /name=general%20%2F%20standup&/, 'encoded as Python\'s quote, spaces and slashes escaped');
  const location = new URL(joined.headers.location);
  t.equal(location.origin + '/bigbluebutton/api/join', location.origin + location.pathname);
  t.ok(bbbChecksumValid(location, 'shared-secret'), 'the join URL carries a valid checksum');
  t.equal(location.searchParams.get('role'), 'MODERATOR');
  t.equal(location.searchParams.get('fullName'), 'Olivia Owner');
  t.equal(location.searchParams.get('createTime'), '1700000000123');
  t.equal(location.searchParams.get('meetingID'), create.searchParams.get('meetingID'));

  const member = await f.createUser('m@example.com', 'Mia Member');
  const viewer = await f.call(member, 'GET', path, { bigbluebutton: signed });
  const viewerLocation = new URL(viewer.headers.location);
  t.equal(viewerLocation.searchParams.get('role'), 'VIEWER', 'only the creator moderates');
  t.equal(viewerLocation.searchParams.get('fullName'), 'Mia Member');
  t.ok(bbbChecksumValid(viewerLocation, 'shared-secret'));
});

t.test('BigBlueButton: tampered, foreign and unverifiable links are refused', async (t) => {
  const { f, bbb } = await bbbFixture(t, 'shared-secret');
  const created = await f.call(f.owner, 'GET', '/api/v1/calls/bigbluebutton/create', { meeting_name: 'm' });
  const { signed } = joinPath(created.json.url);
  const [payload, signature] = signed.split('.');
  const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), moderator: 99 })).toString('base64url');
  for (const bad of [`${forged}.${signature}`, `${payload}.AAAA`, payload, `${signed}.x`, '', '%%%']) {
    t.match(await f.call(f.owner, 'GET', '/calls/bigbluebutton/join', { bigbluebutton: bad }), { status: 400, json: { code: 'BAD_REQUEST', msg: 'Invalid signature.' } }, `refused: ${bad.slice(0, 20)}`);
  }
  // The same link in another organization.
  const beta = await createOrganization(f.runtime, { name: 'Beta', subdomain: 'beta', ownerEmail: 'boss@beta.example', ownerPassword: 'pw', ownerName: 'Boss' });
  const boss = { email: 'boss@beta.example', api_key: beta.owner.api_key, user_id: beta.owner.user_id };
  const foreign = await f.call(boss, 'GET', '/calls/bigbluebutton/join', { bigbluebutton: signed }, { headers: { host: 'beta.localhost' } });
  t.match(foreign, { status: 400, json: { msg: 'Invalid signature.' } });
  t.equal(bbb.calls.length, 0, 'no refused link reaches BigBlueButton');
});

t.test('BigBlueButton: the server refusing our checksum, failing, or unreachable', async (t) => {
  const { f } = await bbbFixture(t, 'our-secret', 'their-secret');
  const created = await f.call(f.owner, 'GET', '/api/v1/calls/bigbluebutton/create', { meeting_name: 'm' });
  const { path, signed } = joinPath(created.json.url);
  t.match(await f.call(f.owner, 'GET', path, { bigbluebutton: signed }), { status: 400, json: { msg: 'Error authenticating to the BigBlueButton server.' } });

  const port = await closedPort();
  const g = await chatFixture({ config: { bbbUrl: `http://127.0.0.1:${port}/bigbluebutton`, bbbSecret: 's' } });
  t.teardown(g.stop);
  const link = joinPath((await g.call(g.owner, 'GET', '/api/v1/calls/bigbluebutton/create', { meeting_name: 'm' })).json.url);
  t.match(await g.call(g.owner, 'GET', link.path, { bigbluebutton: link.signed }), { status: 400, json: { msg: 'Error connecting to the BigBlueButton server.' } });
});

t.test('server settings: flags and PARLEY_* variables, URLs checked, trailing slashes dropped', async (t) => {
  const { loadConfig } = await import('../src/config.js');
  const c = loadConfig(['--jitsi-server-url', 'https://meet.example/', '--bbb-url=https://bbb.example/bigbluebutton/', '--bbb-secret', 's3'], { PARLEY_PUSH_BOUNCER_URL: 'http://127.0.0.1:9' });
  t.same([c.jitsiServerUrl, c.bbbUrl, c.bbbSecret, c.pushBouncerUrl], ['https://meet.example', 'https://bbb.example/bigbluebutton', 's3', 'http://127.0.0.1:9']);
  const d = loadConfig([], {});
  t.same([d.jitsiServerUrl, d.bbbUrl, d.bbbSecret, d.pushBouncerUrl], ['', '', '', ''], 'nothing configured by default');
  t.throws(() => loadConfig(['--jitsi-server-url', 'ftp://meet.example'], {}), /http or https URL/);
  t.throws(() => loadConfig([], { PARLEY_BBB_URL: 'not a url' }), /http or https URL/);
});

t.test('roles: guests and bots may make calls, as in Zulip', async (t) => {
  const bbb = await fakeBbb('s');
  t.teardown(() => bbb.server.close());
  const f = await chatFixture({ config: { jitsiServerUrl: JITSI, bbbUrl: bbb.url, bbbSecret: 's' } });
  t.teardown(f.stop);
  const guest = await withRole(f, 'guest@example.com', 600);
  const bot = await f.call(f.owner, 'POST', '/api/v1/bots', { full_name: 'Call Bot', short_name: 'callbot' });
  const botCreds = await botCredentials(f, bot.json);
  for (const who of [guest, botCreds]) {
    t.equal((await f.call(who, 'POST', '/api/v1/calls/jitsi/create')).status, 200);
    const link = (await f.call(who, 'GET', '/api/v1/calls/bigbluebutton/create', { meeting_name: 'x' })).json.url as string;
    const joined = await f.call(who, 'GET', link.split('?')[0], { bigbluebutton: new URL(link, 'http://x').searchParams.get('bigbluebutton')! });
    t.equal(new URL(joined.headers.location).searchParams.get('role'), 'MODERATOR');
  }
  t.match(await f.call(guest, 'PATCH', '/api/v1/realm', { video_chat_provider: 4 }), { status: 400, json: { code: 'UNAUTHORIZED_PRINCIPAL' } });
});
