/**
 * Building a data export's archive (Zulip's `zerver/lib/export.py`, in its own
 * format): a gzipped tar of JSON files (written by `tar-stream`, which takes long
 * names as pax headers), stored in the upload store like any
 * uploaded file and served at an unguessable URL, as Zulip serves export tarballs.
 *
 * - `realm.json`: the organization, its settings, email domains, linkifiers, code
 *   playgrounds, custom emoji (names), custom profile fields and user groups;
 * - `users.json`: every user, without credentials (no API key, no password hash); a
 *   delivery email only where its owner lets administrators see it;
 * - `channels.json` and `subscriptions.json`: the public channels (full export: every
 *   channel) and who is subscribed;
 * - `messages-NNNNNN.json`, 1,000 messages each: the messages of public channels; a
 *   full export adds the private data of members who consented
 *   (`allow_private_data_export`): private channel messages they received and their
 *   direct messages.
 *
 * Which channels and messages it covers is taken at once, when the build starts (their
 * id lists copied); the records (replaced, never changed, by later writes) are gathered,
 * and the JSON made and compressed, in slices, the event loop let run between them, so
 * a large organization does not stall the server.
 */
import { randomBytes } from 'node:crypto';
import { createGzip } from 'node:zlib';
import { pack, type Pack } from 'tar-stream';
import { consentingUsers, EXPORT_FULL_WITH_CONSENT } from '../../actors/areas/realm_exports.js';
import { listLinkifiers } from '../../actors/areas/linkifiers.js';
import { listPlaygrounds } from '../../actors/areas/playgrounds.js';
import { received } from '../../actors/kinds/channel.js';
import type { OrgContext } from '../../actors/kinds/organization.js';
import type { RealmExportRecord } from '../../actors/areas/realm_exports.js';
import type { Runtime } from '../../actors/runtime/runtime.js';
import { realmSettings } from '../../actors/rules/realm_settings.js';
import type { StoredMessage } from '../../actors/shared/types.js';
import { withBodies } from '../../actors/engines/message_query.js';
import { uploadStore } from '../uploads/store.js';

/** Messages per `messages-NNNNNN.json` file. */
const MESSAGES_PER_FILE = 1000;
/** Zulip's `email_address_visibility` value that hides an address even from administrators. */
const EMAIL_VISIBLE_TO_NOBODY = 4;

const json = (value: unknown): Buffer => Buffer.from(`${JSON.stringify(value, null, 1)}\n`);

/** How an export's build is cut into slices; tests change it. */
export const EXPORT_SLICE = {
  /** Messages (kept or not) looked at between yields while the export's contents are gathered. */
  cover: 2000,
  /** Called each time the build yields (tests count the slices). */
  onYield: undefined as (() => void) | undefined,
};

/** Lets the event loop run: other requests go on between slices. */
const yieldToLoop = (): Promise<void> => {
  EXPORT_SLICE.onYield?.();
  return new Promise((resolve) => setImmediate(resolve));
};

/** What an export covers, taken at once: the organization's records and the messages, by reference. */
interface Covered {
  org: OrgContext;
  channels: Array<{ record: unknown; subscribers: number[] }>;
  /** Without their bodies: those are read a file's worth at a time. */
  messages: StoredMessage[];
}

/**
 * What an export covers. Which channels and which message ids are taken at once (cheap
 * copies of the id lists); the ids are then resolved to their records and checked in
 * slices, the loop let run between them: 50,000 messages gathered and sorted in one
 * tick held it for 20-35 ms, and the rest of the build waited behind it. A message
 * deleted meanwhile is left out; one edited meanwhile is exported as edited.
 */
async function cover(runtime: Runtime, orgId: number, type: number): Promise<Covered> {
  const org = runtime.org(orgId)!;
  const full = type === EXPORT_FULL_WITH_CONSENT;
  const consenting = full ? consentingUsers(org).map((u) => u.user_id) : [];
  const channels: Covered['channels'] = [];
  const taken: Array<{ ch: NonNullable<ReturnType<Runtime['channel']>>; isPublic: boolean; ids: number[] }> = [];
  for (const streamId of [...org.channelsByName.values()].sort((a, b) => a - b)) {
    const ch = runtime.channel(orgId, streamId);
    if (!ch) continue;
    const isPublic = !ch.channel.invite_only;
    if (!isPublic && !full) continue;
    channels.push({ record: ch.channel, subscribers: [...ch.subscribers].sort((a, b) => a - b) });
    taken.push({ ch, isPublic, ids: Array.from(ch.messages.ids) });
  }
  const direct = full ? [...org.directMessages.values()] : [];
  const messages: StoredMessage[] = [];
  let work = 0;
  for (const { ch, isPublic, ids } of taken) {
    for (const id of ids) {
      if (++work >= EXPORT_SLICE.cover) {
        work = 0;
        await yieldToLoop();
      }
      const m = ch.messages.get(id);
      if (m && (isPublic || consenting.some((uid) => received(ch, uid, id)))) messages.push(m);
    }
  }
  if (full) {
    const mine = new Set(consenting);
    for (const m of direct) {
      if (++work >= EXPORT_SLICE.cover) {
        work = 0;
        await yieldToLoop();
      }
      if (m.dm_user_ids?.some((uid) => mine.has(uid))) messages.push(m);
    }
  }
  await yieldToLoop();
  messages.sort((a, b) => a.id - b.id);
  return { org, channels, messages };
}

/**
 * Writes the archive's files into `tar`, one at a time, each once the stream has taken
 * the last (so a slow disk holds the build back rather than memory), with the loop let
 * run between slices of messages; then ends it.
 */
async function writeArchive(runtime: Runtime, tar: Pack, c: Covered, e: RealmExportRecord, dir: string, mtime: Date): Promise<void> {
  const add = (name: string, value: unknown): Promise<void> =>
    new Promise((resolve, reject) => void tar.entry({ name: `${dir}/${name}`, mtime, mode: 0o644 }, json(value), (err) => (err ? reject(err) : resolve())));
  const { org } = c;
  await add('realm.json', {
    id: org.org.id, name: org.org.name, string_id: org.org.subdomain, description: org.org.description, date_created: org.org.date_created,
    settings: realmSettings(org), domains: org.domains, linkifiers: listLinkifiers(org), playgrounds: listPlaygrounds(org),
    emoji: [...org.realmEmoji.values()].map((x) => ({ id: x.id, name: x.name, author_id: x.author_id, deactivated: x.deactivated })),
    profile_fields: [...org.profileFields.values()], user_groups: [...org.userGroups.values()],
    export: { id: e.id, type: e.type, acting_user_id: e.acting_user_id, requested: e.requested },
  });
  await add('users.json', [...org.users.values()].map((u) => ({
    user_id: u.user_id, email: u.email, full_name: u.full_name, role: u.role, is_active: u.is_active, is_bot: u.is_bot, bot_type: u.bot_type,
    bot_owner_id: u.bot_owner_id, date_joined: u.date_joined, timezone: u.timezone,
    delivery_email: ((u.settings?.email_address_visibility as number | undefined) ?? 1) === EMAIL_VISIBLE_TO_NOBODY ? null : u.delivery_email,
  })));
  await add('channels.json', c.channels.map((x) => x.record));
  await add('subscriptions.json', c.channels.map((x) => ({ stream_id: (x.record as { stream_id: number }).stream_id, user_ids: x.subscribers })));
  for (let i = 0, n = 1; i < c.messages.length || n === 1; i += MESSAGES_PER_FILE, n++) {
    await yieldToLoop();
    const slice = (await withBodies(runtime, org.org.id, c.messages.slice(i, i + MESSAGES_PER_FILE))).map((m) => ({
      id: m.id, sender_id: m.sender_id, timestamp: m.timestamp, stream_id: m.stream_id, topic: m.stream_id === null ? null : m.topic,
      dm_user_ids: m.dm_user_ids, content: m.content, rendered_content: m.rendered, reactions: m.reactions ?? [], submessages: m.submessages ?? [], last_edit_timestamp: m.last_edit_timestamp ?? null,
    }));
    await add(`messages-${String(n).padStart(6, '0')}.json`, { messages: slice });
  }
  tar.finalize();
}

/**
 * Builds export `id` of an organization and records how it ended (`FINISH_EXPORT`):
 * the archive stored and its URL, or a failure. `realmUrl`: the organization's URL, the
 * base of the archive's. Never throws.
 */
export async function buildExport(runtime: Runtime, dataDir: string, orgId: number, id: number, realmUrl: string, token: () => string): Promise<void> {
  let file: RealmExportRecord['file'];
  try {
    await yieldToLoop();
    const e = runtime.org(orgId)?.exports.get(id);
    if (!e || e.status !== 'requested') return;
    const mtime = new Date(runtime.nowMs());
    const stamp = new Date(runtime.nowMs()).toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
    const dir = `zulip-export-${runtime.org(orgId)!.org.subdomain || 'realm'}-${stamp}`;
    const covered = await cover(runtime, orgId, e.type);
    const store = uploadStore(dataDir);
    const tar = pack();
    const gzip = createGzip();
    tar.on('error', (err: Error) => gzip.destroy(err));
    tar.pipe(gzip);
    const written = writeArchive(runtime, tar, covered, e, dir, mtime).catch((err: Error) => {
      tar.destroy(err);
      throw err;
    });
    const received = store.receive(gzip, Number.MAX_SAFE_INTEGER).catch((err: Error) => {
      tar.destroy(err);
      throw err;
    });
    const [got] = await Promise.all([received, written]);
    try {
      await store.commit(orgId, got);
    } catch (err) {
      await store.discard(got);
      throw err;
    }
    const key = token();
    const name = `${dir}.tar.gz`;
    file = { sha256: got.sha256, size: got.size, name, key, url: `${realmUrl}/user_avatars/exports/${orgId}/${key}/${name}` };
  } catch {
    file = undefined;
  }
  await runtime.execute({ type: 'FINISH_EXPORT', org: orgId, id, ...(file ? { file } : {}) }).catch(() => {});
}

/**
 * Builds the exports a restart left unfinished (asked for, never recorded as done or
 * failed), one after another, at each organization's URL on this server.
 */
export function resumeExports(runtime: Runtime, config: { dataDir: string; externalHost: string }): void {
  const pending: Array<{ org: number; id: number; url: string }> = [];
  for (const [orgId, org] of runtime.server().orgs) {
    for (const e of runtime.org(orgId)?.exports.values() ?? []) {
      if (e.status === 'requested') pending.push({ org: orgId, id: e.id, url: `http://${org.subdomain ? `${org.subdomain}.` : ''}${config.externalHost}` });
    }
  }
  void (async () => {
    for (const p of pending) await buildExport(runtime, config.dataDir, p.org, p.id, p.url, () => randomBytes(18).toString('base64url'));
  })();
}
