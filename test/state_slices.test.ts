/**
 * Areas own their state (`actors/core/state_slices.ts`): each field an area adds to a
 * kind's context is one of its declared slices, so the kind makes it for a new actor,
 * writes it in the head chunk and reads it back; a head chunk written before the slice
 * existed gives its empty value. The fields are read from the source, as the import
 * graph test reads imports: a field added to a context type without its slice fails here.
 */
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './paths.js';
import '../actors/areas/index.js';
import { orgState } from '../actors/core/state_slices.js';
import { MemoryBodies } from '../actors/core/bodies.js';
import type { Chunk } from '../actors/core/persistence.js';
import { emptyOrg, orgPersistence } from '../actors/kinds/organization.js';
import { emptyUser, userPersistence, userRestore } from '../actors/kinds/user.js';
import { emptyServer, serverPersistence } from '../actors/kinds/server.js';

/** The fields of `iface` (`OrgContext`…) across its declaration and every augmentation of it. */
function declaredFields(iface: string): string[] {
  const fields: string[] = [];
  for (const entry of readdirSync(join(root, 'actors'), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const text = readFileSync(join(entry.parentPath, entry.name), 'utf8');
    for (const m of text.matchAll(new RegExp(`^( *)(?:export )?interface ${iface} \\{\\n([\\s\\S]*?)^\\1\\}`, 'gm'))) {
      const indent = ' '.repeat(m[1].length + 2);
      for (const line of m[2].split('\n')) {
        const field = new RegExp(`^${indent}(\\w+)\\??:`).exec(line);
        if (field) fields.push(field[1]);
      }
    }
  }
  return fields.sort();
}

/** The head chunk (the first) of an actor's chunks. */
function headOf(chunks: Generator<() => Chunk>): Record<string, unknown> {
  return { ...chunks.next().value!() };
}

const bodies = new MemoryBodies();
const kinds = [
  {
    name: 'OrgContext', core: 'seq org users byEmail', fresh: () => emptyOrg(7, bodies), head: (ctx: any) => headOf(orgPersistence.chunks(ctx, 100)),
    restore(head: Record<string, unknown>) {
      let out: unknown;
      orgPersistence.restore(head as unknown as Chunk, { installOrg: (c) => (out = c), org: () => undefined, bodies, bodySource: bodies, version: 4 });
      return out as Record<string, unknown>;
    },
  },
  {
    name: 'UserContext', core: 'seq user_id subs former unread flags', fresh: () => emptyUser(3), head: (ctx: any) => headOf(userPersistence(7).chunks(ctx, 100)),
    restore(head: Record<string, unknown>) {
      let out: unknown;
      userRestore.restore(head as unknown as Chunk, { installUser: (_org, c) => (out = c), version: 4 });
      return out as Record<string, unknown>;
    },
  },
  {
    name: 'ServerContext', core: 'seq orgs bySubdomain maxMessageId', fresh: () => emptyServer(), head: (ctx: any) => headOf(serverPersistence.chunks(ctx, 100)),
    restore(head: Record<string, unknown>) {
      let out: unknown;
      serverPersistence.restore(head as unknown as Chunk, { installServer: (c) => (out = c), version: 4 });
      return out as Record<string, unknown>;
    },
  },
];

for (const kind of kinds) {
  t.test(`every field of ${kind.name}, the kind's own and its areas', is made, saved and restored`, async (t) => {
    const fields = declaredFields(kind.name);
    t.ok(fields.length > kind.core.split(' ').length, `the fields are found (${fields.join(', ')})`);
    const fresh = kind.fresh() as unknown as Record<string, unknown>;
    t.same(Object.keys(fresh).sort(), fields, 'a new actor has every field');
    t.same(fields.filter((f) => fresh[f] === undefined), [], 'each made');
    const restored = kind.restore(kind.head(fresh));
    t.same(Object.keys(restored).sort(), fields, 'a restored one has every field');
    t.same(restored, fresh, 'the same values');
  });

  t.test(`a ${kind.name} head chunk written before its areas had state restores their slices empty`, async (t) => {
    const fresh = kind.fresh() as unknown as Record<string, unknown>;
    const head = kind.head(fresh);
    const bare: Record<string, unknown> = { k: head.k };
    for (const f of ['org', ...kind.core.split(' '), 'channelsByName', 'nextUserId', 'nextChannelId', 'nextRecipientId', 'groupRecipients']) if (f in head) bare[f] = head[f];
    t.ok(Object.keys(bare).length < Object.keys(head).length, 'the areas\' slices are left out');
    t.same(kind.restore(bare), fresh);
  });
}

t.test('the head chunks hold every field format 4 wrote, under its name then', async (t) => {
  const org = headOf(orgPersistence.chunks(emptyOrg(1, bodies), 100));
  const FORMAT_4_ORG = 'k seq org users channelsByName nextUserId nextChannelId nextRecipientId groupRecipients folders lastDirectId profileFields lastProfileFieldId userDefaults realmSettings domains linkifiers lastLinkifierId playgrounds exports lastExportId lastPlaygroundId alertWords userGroups lastGroupId presence presenceLastUpdateId invites attachments realmEmoji lastEmojiId lastAttachmentId deletionJobs lastDeletionJobId';
  t.same(FORMAT_4_ORG.split(' ').filter((f) => !(f in org)), []);
  t.notOk('attachmentByPath' in org, 'derived slices are not written');
  const user = headOf(userPersistence(1).chunks(emptyUser(2), 100));
  const FORMAT_4_USER = 'k org seq user_id subs former unread flags topics scheduled next_scheduled_id personal push_tokens devices next_device_id push_accounts';
  t.same(FORMAT_4_USER.split(' ').filter((f) => !(f in user)), []);
  t.ok('maxSubmessageId' in headOf(serverPersistence.chunks(emptyServer(), 100)));
});

t.test('a slice declared after the kinds read them is refused (its module is not among the areas)', async (t) => {
  t.throws(() => orgState({ linkifiers: { empty: () => [] } }), /declared after the kinds read them/);
});
