/**
 * The organization the `stall` scenario measures against, built in this process straight
 * into the data directory of the server it then starts (no HTTP, no password hashes), so
 * that thousands of users and channels and a hundred thousand messages take seconds:
 * every user in one large channel, most messages in a channel of a few, the owner in
 * every channel, many topics, linkifiers that content can match, alert words, and the
 * message board's switches on.
 */
import { quietLogger } from '../actors/core/logger.js';
import { createOrganization } from '../src/bootstrap.js';
import { openStore } from '../src/store.js';
import type { Credentials } from './api.js';
import type { Mode } from './scenario.js';

/** How large the organization is. */
export interface FixtureSizes {
  users: number;
  channels: number;
  messages: number;
  topics: number;
  linkifiers: number;
  /** Alert words of the owner and of every user in the large channel's first hundred. */
  alertWords: number;
}

export const FIXTURE_SIZES: Record<Mode, FixtureSizes> = {
  smoke: { users: 30, channels: 10, messages: 300, topics: 10, linkifiers: 10, alertWords: 10 },
  quick: { users: 2000, channels: 300, messages: 20_000, topics: 200, linkifiers: 100, alertWords: 100 },
  full: { users: 5000, channels: 1000, messages: 50_000, topics: 1000, linkifiers: 100, alertWords: 100 },
};

/** What the organization holds that requests can name. */
export interface Fixture {
  sizes: FixtureSizes;
  owner: Credentials;
  /** A member, for requests about someone else (`PATCH /users/{user_id}`). */
  member: Credentials;
  /** A member the run may deactivate (`DELETE /users/me`, `DELETE /users/{user_id}`). */
  sacrificial: Credentials;
  userIds: number[];
  /** The channel every user is in, and its name. */
  bigChannel: { id: number; name: string };
  /** The channel with most messages (a few members: a send costs per recipient). */
  history: { id: number; name: string };
  channelIds: number[];
  /** Every message (one in 50 in the big channel, the others in the history), oldest first. */
  messageIds: number[];
  topics: string[];
  linkifierIds: number[];
  /** The owner's newest message in the history, for routes about one message (edits need their sender). */
  ownMessageId: number;
}

/** A message's content: words to search for, a linkifier match, a little Markdown. */
function content(i: number, linkifiers: number): string {
  return `message ${i}: the quick brown fox **jumps** over the lazy dog, see L${i % Math.max(1, linkifiers)}-${i} and https://example.com/${i}`;
}

/** The index of the owner's newest message in the history: senders and channels go by index in `buildFixture`. */
function ownIndex(messages: number): number {
  let k = messages - 1;
  while (k > 0 && (k % 3 !== 0 || k % 50 === 0)) k--;
  return k;
}

/** Builds the organization in `dataDir`, snapshots it, and closes the store; returns what it holds. */
export async function buildFixture(dataDir: string, sizes: FixtureSizes): Promise<Fixture> {
  const store = openStore({ dataDir, fsync: 'none', fsyncBatchMs: 100, segmentBytes: 64 << 20, skipCorrupt: false, keepSnapshots: 3, log: quietLogger, onFatal: (e) => { throw e; } });
  try {
    const rt = store.runtime;
    const created = await createOrganization(rt, { name: 'Stall', subdomain: '', ownerEmail: 'owner@stall.invalid', ownerPassword: 'owner-pass', ownerName: 'Owner' });
    const org = created.organization_id;
    const owner: Credentials = { user_id: created.owner.user_id, email: created.owner.email, api_key: created.owner.api_key };
    const users: Credentials[] = [];
    for (let i = 0; i < sizes.users; i += 500) {
      const batch = Array.from({ length: Math.min(500, sizes.users - i) }, (_, j) => i + j);
      const made = await Promise.all(batch.map((n) => rt.execute({ type: 'CREATE_USER', org, actor_id: owner.user_id, email: `u${n}@stall.invalid`, password_hash: '', full_name: `User ${n}`, role: 400 })));
      for (const m of made) users.push({ user_id: m.user.user_id, email: m.user.email, api_key: m.user.api_key });
    }
    const userIds = users.map((u) => u.user_id);
    const subscribe = (names: string[], principals: number[] | null): Promise<unknown> =>
      rt.execute({ type: 'SUBSCRIBE', org, actor_id: owner.user_id, channels: names.map((name) => ({ name })), principals, invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
    const bigName = 'stall-big';
    await subscribe([bigName], [owner.user_id, ...userIds]);
    const others = Array.from({ length: sizes.channels - 1 }, (_, i) => `stall-${i}`);
    for (let i = 0; i < others.length; i += 200) await subscribe(others.slice(i, i + 200), [owner.user_id, ...userIds.slice(0, 20)]);
    // The history: most messages, in a channel of a few members (a send costs per recipient).
    const historyName = 'stall-history';
    await subscribe([historyName], [owner.user_id, ...userIds.slice(0, 20)]);
    const byName = rt.org(org)!.channelsByName;
    const bigId = byName.get(bigName)!;
    const historyId = byName.get(historyName)!;
    // Messages first: linkifiers and alert words make every send dearer, and the history is what the routes read.
    const topics = Array.from({ length: sizes.topics }, (_, i) => `topic ${i}`);
    const messageIds: number[] = [];
    for (let i = 0; i < sizes.messages; i += 1000) {
      const sent = await Promise.all(
        Array.from({ length: Math.min(1000, sizes.messages - i) }, (_, j) => {
          const n = i + j;
          const sender = n % 3 === 0 ? owner : users[n % 20];
          const stream_id = n % 50 === 0 ? bigId : historyId;
          return rt.execute({ type: 'SEND_MESSAGE', org, sender_id: sender.user_id, to: { stream_id: stream_id, topic: topics[n % topics.length] }, content: content(n, sizes.linkifiers), client: 'bench', read_by_sender: true });
        }),
      );
      for (const s of sent) messageIds.push((s as { id: number }).id);
    }
    const linkifierIds: number[] = [];
    for (let i = 0; i < sizes.linkifiers; i++) {
      const v = await rt.execute({ type: 'SET_LINKIFIER', org, actor_id: owner.user_id, op: 'add', pattern: `L${i}-(?P<id>[0-9]+)`, url_template: `https://l${i}.example/{id}` });
      linkifierIds.push(v.id);
    }
    const words = Array.from({ length: sizes.alertWords }, (_, i) => `alert${i}`);
    for (const u of [owner, ...users.slice(0, 100)]) await rt.execute({ type: 'CHANGE_ALERT_WORDS', org, user_id: u.user_id, op: 'add', words });
    for (const name of ['guestbook', 'compat'] as const) await rt.execute({ type: 'SET_BOARD_SWITCH', name, on: true });
    await store.snapshot();
    return {
      sizes,
      owner,
      member: users[1],
      sacrificial: users[users.length - 1],
      userIds,
      bigChannel: { id: bigId, name: bigName },
      history: { id: historyId, name: historyName },
      channelIds: [...byName.values()],
      messageIds,
      topics,
      linkifierIds,
      ownMessageId: messageIds[ownIndex(sizes.messages)],
    };
  } finally {
    await store.close();
  }
}
