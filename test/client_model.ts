/**
 * One client model for the convergence tests, like Zulip's `apply_event`
 * (zerver/lib/events.py): the state `POST /register` gave plus the events since equals a
 * fresh `register`. `applyEvent` knows the event types below and throws on any other (and on
 * an op, or a section, it has not been taught), so a test that meets a new type fails until
 * the model learns it; `verifyAction` is Zulip's `verify_action`: register, act, apply the
 * events, register again, compare. `verifyState` is its second half, for tests whose actions
 * are interleaved with their own checks.
 *
 * Every convergence test uses these: user_access through `applyEvent` with the fake email
 * domain an inaccessible user needs; reactions and submessages through `applyEvent` on a
 * client's cached messages (`messages`), and uploads on a listing (`attachments`), which
 * register does not hold (Zulip's apply_event passes on those events). actors.test.ts's
 * convergence replays facts into a fresh runtime, not a client, and realm_exports' is the
 * event's list, which register lacks.
 */
import type { Test } from 'tap';
import { queueEvents, settle, type ChatFixture, type Credentials } from './helpers.js';

type State = Record<string, any>;
type Event = Record<string, any>;

/** What Zulip's `apply_event` takes beside the state and the event: who the client is, and how it registered. */
export interface Client {
  me: number;
  /** `slim_presence` (or the `simplified_presence_events` capability): presences keyed by user id. */
  slim_presence?: boolean;
  /** `user_list_incomplete`: a user the client may no longer access is dropped, not shown as unknown. */
  user_list_incomplete?: boolean;
  /** The organization's fake email domain (Zulip's `get_fake_email_domain`), for an inaccessible user's email. */
  fake_email_domain?: string;
}

/** Zulip's `get_data_for_inaccessible_user`: what a limited guest is shown for a user they may not access. */
function inaccessibleUser(userId: number, client: Client): Record<string, unknown> {
  if (client.fake_email_domain === undefined) throw new Error('the client model needs the fake email domain (Client.fake_email_domain) to show an inaccessible user');
  return {
    email: `user${userId}@${client.fake_email_domain}`, user_id: userId, avatar_version: 1, is_admin: false, is_owner: false, is_guest: false,
    role: 400, is_bot: false, full_name: 'Unknown user', timezone: '', is_active: true, date_joined: '1970-01-01T00:00:00+00:00',
    delivery_email: null, avatar_url: '/static/images/unknown-user-avatar.png', profile_data: {}, is_imported_stub: false,
  };
}

const byKey = <T>(list: T[], key: (x: T) => unknown, value: unknown): number => list.findIndex((x) => key(x) === value);

/** Replaces, adds or removes one element of a list section, by a key. */
function upsert<T>(list: T[], key: (x: T) => unknown, item: T): T[] {
  const at = byKey(list, key, key(item));
  return at < 0 ? [...list, item] : list.map((x, i) => (i === at ? item : x));
}

const sortIds = (ids: Iterable<number>): number[] => [...new Set(ids)].sort((a, b) => a - b);

/**
 * Unread messages as Zulip's apply_event keeps them (`raw_unread_msgs`): where each unread
 * message is, which are mentions, which count (a muted channel's do not). Derived from the
 * register's `unread_msgs` the first time an event touches them; `unread_msgs` is rebuilt
 * from it after each such event, in the server's order.
 */
interface RawUnread {
  where: Map<number, { stream_id: number; topic: string } | { other: number } | { key: string }>;
  mentions: Set<number>;
  counted: Set<number>;
}
const RAW_UNREAD = new WeakMap<State, RawUnread>();

const channelMuted = (state: State, streamId: number): boolean => state.subscriptions?.find((s: any) => s.stream_id === streamId)?.is_muted ?? false;

function rawUnread(state: State): RawUnread {
  let raw = RAW_UNREAD.get(state);
  if (raw) return raw;
  const u = state.unread_msgs;
  raw = { where: new Map(), mentions: new Set(u.mentions), counted: new Set() };
  for (const s of u.streams) {
    for (const id of s.unread_message_ids) {
      raw.where.set(id, { stream_id: s.stream_id, topic: s.topic });
      if (!channelMuted(state, s.stream_id)) raw.counted.add(id);
    }
  }
  for (const p of u.pms) for (const id of p.unread_message_ids) (raw.where.set(id, { other: p.other_user_id }), raw.counted.add(id));
  for (const h of u.huddles) for (const id of h.unread_message_ids) (raw.where.set(id, { key: h.user_ids_string }), raw.counted.add(id));
  if (raw.counted.size !== u.count) throw new Error(`the client model cannot tell which unread channels are muted (count ${u.count}, ${raw.counted.size} unread outside muted channels it knows): register 'subscription' too`);
  RAW_UNREAD.set(state, raw);
  return raw;
}

/** `unread_msgs` from the raw form, ordered as the server orders it. */
function writeUnread(state: State, raw: RawUnread): void {
  const streams = new Map<string, { stream_id: number; topic: string; unread_message_ids: number[] }>();
  const pms = new Map<number, number[]>();
  const huddles = new Map<string, number[]>();
  const ids = [...raw.where.keys()].sort((a, b) => a - b);
  for (const id of ids) {
    const w = raw.where.get(id)!;
    if ('stream_id' in w) {
      const key = `${w.stream_id}\u0000${w.topic.toLowerCase()}`;
      if (!streams.has(key)) streams.set(key, { stream_id: w.stream_id, topic: w.topic, unread_message_ids: [] });
      streams.get(key)!.unread_message_ids.push(id);
    } else if ('other' in w) pms.set(w.other, [...(pms.get(w.other) ?? []), id]);
    else huddles.set(w.key, [...(huddles.get(w.key) ?? []), id]);
  }
  const text = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  state.unread_msgs = {
    ...state.unread_msgs,
    count: ids.filter((id) => raw.counted.has(id)).length,
    streams: [...streams.values()].sort((a, b) => a.stream_id - b.stream_id || text(a.topic.toLowerCase(), b.topic.toLowerCase())),
    pms: [...pms].sort((a, b) => a[0] - b[0]).map(([other, list]) => ({ other_user_id: other, sender_id: other, unread_message_ids: list })),
    huddles: [...huddles].sort((a, b) => text(a[0], b[0])).map(([key, list]) => ({ user_ids_string: key, unread_message_ids: list })),
    mentions: ids.filter((id) => raw.mentions.has(id)),
  };
}

/** A direct message's place in `unread_msgs`: by the other participant, or by everyone's ids. */
function directPlace(others: number[], me: number, fallback: number): { other: number } | { key: string } {
  return others.length <= 1 ? { other: others[0] ?? fallback } : { key: sortIds([...others, me]).join(',') };
}

/** The users lists of `realm_user`: the active and the deactivated. */
function findUser(state: State, userId: number): any {
  return state.realm_users.find((u: any) => u.user_id === userId) ?? state.realm_non_active_users?.find((u: any) => u.user_id === userId);
}

/** A role's flags, as the server derives them. */
const roleFlags = (role: number) => ({ is_owner: role === 100, is_admin: role <= 200, is_guest: role === 600 });

const APPLY: Record<string, (state: State, e: Event, client: Client) => void> = {
  drafts(state, e) {
    if (e.op === 'add') state.drafts = [...state.drafts, ...e.drafts];
    else if (e.op === 'update') state.drafts = upsert(state.drafts, (d: any) => d.id, e.draft);
    else if (e.op === 'remove') state.drafts = state.drafts.filter((d: any) => d.id !== e.draft_id);
    else throw unknown(e);
  },
  saved_snippets(state, e) {
    if (e.op === 'add' || e.op === 'update') state.saved_snippets = upsert(state.saved_snippets, (s: any) => s.id, e.saved_snippet);
    else if (e.op === 'remove') state.saved_snippets = state.saved_snippets.filter((s: any) => s.id !== e.saved_snippet_id);
    else throw unknown(e);
  },
  navigation_view(state, e) {
    if (e.op === 'add') state.navigation_views = [...state.navigation_views, e.navigation_view];
    else if (e.op === 'update') state.navigation_views = state.navigation_views.map((v: any) => (v.fragment === e.fragment ? { ...v, ...e.data } : v));
    else if (e.op === 'remove') state.navigation_views = state.navigation_views.filter((v: any) => v.fragment !== e.fragment);
    else throw unknown(e);
  },
  muted_users(state, e) {
    state.muted_users = e.muted_users;
  },
  alert_words(state, e) {
    state.alert_words = e.alert_words;
  },
  realm_domains(state, e) {
    if (e.op === 'add') state.realm_domains = [...state.realm_domains, e.realm_domain];
    else if (e.op === 'change') state.realm_domains = upsert(state.realm_domains, (d: any) => d.domain, e.realm_domain);
    else if (e.op === 'remove') state.realm_domains = state.realm_domains.filter((d: any) => d.domain !== e.domain);
    else throw unknown(e);
  },
  default_streams(state, e) {
    state.realm_default_streams = e.default_streams;
  },
  realm_linkifiers(state, e) {
    state.realm_linkifiers = e.realm_linkifiers;
  },
  realm_playgrounds(state, e) {
    state.realm_playgrounds = e.realm_playgrounds;
  },
  realm_emoji(state, e) {
    if (e.op !== 'update') throw unknown(e);
    state.realm_emoji = e.realm_emoji;
  },
  realm(state, e) {
    if (e.op === 'update') {
      state[`realm_${e.property}`] = e.value;
      // Derived, as in Zulip's apply_event.
      if (e.property === 'message_edit_history_visibility_policy') state.realm_allow_edit_history = e.value !== 'none';
    } else if (e.op === 'update_dict') for (const [k, v] of Object.entries(e.data)) state[`realm_${k}`] = v;
    else throw unknown(e);
  },
  realm_bot(state, e) {
    const bots: any[] = state.realm_bots;
    if (e.op === 'add') state.realm_bots = [...bots, e.bot];
    else if (e.op === 'update') Object.assign(bots.find((b) => b.user_id === e.bot.user_id), e.bot);
    else if (e.op === 'remove') Object.assign(bots.find((b) => b.user_id === e.bot.user_id), { is_active: false });
    else if (e.op === 'delete') state.realm_bots = bots.filter((b) => b.user_id !== e.bot.user_id);
    else throw unknown(e);
  },
  channel_folder(state, e) {
    const folders: any[] = state.channel_folders;
    if (e.op === 'add') folders.push(e.channel_folder);
    else if (e.op === 'update') Object.assign(folders.find((x) => x.id === e.channel_folder_id), e.data);
    else if (e.op === 'reorder') e.order.forEach((id: number, i: number) => (folders.find((x) => x.id === id).order = i));
    else throw unknown(e);
    folders.sort((a, b) => a.order - b.order);
  },
  custom_profile_fields(state, e) {
    state.custom_profile_fields = e.fields;
  },
  user_settings(state, e) {
    if (e.op !== 'update') throw unknown(e);
    state.user_settings[e.property] = e.value;
  },
  realm_user_settings_defaults(state, e) {
    if (e.op !== 'update') throw unknown(e);
    state.realm_user_settings_defaults[e.property] = e.value;
  },
  user_status(state, e) {
    // Fields given are set; an empty text or emoji, or away false, clears them; an empty status goes.
    const statuses = state.user_status;
    const s = (statuses[e.user_id] ??= {});
    if (e.away !== undefined) (e.away ? (s.away = true) : delete s.away);
    if (e.status_text !== undefined) (e.status_text ? (s.status_text = e.status_text) : delete s.status_text);
    if (e.emoji_name !== undefined) {
      if (e.emoji_name) Object.assign(s, { emoji_name: e.emoji_name, emoji_code: e.emoji_code, reaction_type: e.reaction_type });
      else (delete s.emoji_name, delete s.emoji_code, delete s.reaction_type);
    }
    if (Object.keys(s).length === 0) delete statuses[e.user_id];
  },
  presence(state, e, client) {
    // Zulip's apply_event: the event's user gets the event's data, in the register's format.
    if (e.presences) return void Object.assign(state.presences, e.presences);
    const w = e.presence.website;
    if (!client.slim_presence) return void (state.presences[e.email] = { aggregated: { client: w.client, status: w.status, timestamp: w.timestamp }, website: w });
    const before = state.presences[e.user_id];
    let active = w.status === 'active' ? w.timestamp : before?.active_timestamp;
    if (active === undefined) {
      // Never active: the server reports the account's creation.
      if (!state.realm_users) throw new Error("the client model needs realm_users for a first idle presence: register 'realm_user' too");
      active = Date.parse(findUser(state, e.user_id).date_joined) / 1000;
    }
    state.presences[e.user_id] = { active_timestamp: active, idle_timestamp: w.timestamp };
  },
  device(state, e) {
    if (e.op === 'add') state.devices[e.device_id] = { push_key_id: null, push_token_id: null, pending_push_token_id: null, push_registration_error_code: null };
    else if (e.op === 'remove') delete state.devices[e.device_id];
    else if (e.op === 'update') {
      const { type: _t, op: _o, device_id, ...changes } = e;
      Object.assign(state.devices[device_id], changes);
    } else throw unknown(e);
  },
  push_device(state, e) {
    state.push_devices[e.push_account_id] = { status: e.status, error_code: e.error_code ?? null };
  },
  attachment(state, e) {
    // Zulip's register has no attachments (its apply_event passes); a state from GET /attachments.
    if (state.attachments === undefined) return;
    if (e.op === 'remove') state.attachments = state.attachments.filter((a: any) => a.id !== e.attachment.id);
    else if (e.op === 'add' || e.op === 'update') state.attachments = upsert(state.attachments, (a: any) => a.id, e.attachment);
    else throw unknown(e);
    state.upload_space_used = e.upload_space_used;
  },
  scheduled_messages(state, e) {
    // Zulip's apply_event: kept in order of delivery time.
    const list: any[] = state.scheduled_messages;
    if (e.op === 'add') list.push(...e.scheduled_messages);
    else if (e.op === 'update') state.scheduled_messages = upsert(list, (m: any) => m.scheduled_message_id, e.scheduled_message);
    else if (e.op === 'remove') state.scheduled_messages = list.filter((m) => m.scheduled_message_id !== e.scheduled_message_id);
    else throw unknown(e);
    state.scheduled_messages.sort((a: any, b: any) => a.scheduled_delivery_timestamp - b.scheduled_delivery_timestamp);
  },
  reminders(state, e) {
    const list: any[] = state.reminders;
    if (e.op === 'add') list.push(...e.reminders);
    else if (e.op === 'remove') state.reminders = list.filter((r) => r.reminder_id !== e.reminder_id);
    else throw unknown(e);
    state.reminders.sort((a: any, b: any) => a.scheduled_delivery_timestamp - b.scheduled_delivery_timestamp);
  },
  realm_export() {
    // For administrators only and not in register (Zulip's apply_event passes).
  },
  invites_changed() {
    // A client refetches GET /invites; register holds no invitations (Zulip's apply_event passes).
  },
  subscription(state, e, { me }) {
    const all = (): any[] => [...(state.subscriptions ?? []), ...(state.unsubscribed ?? []), ...(state.never_subscribed ?? [])];
    if (e.op === 'peer_add' || e.op === 'peer_remove') {
      for (const sub of all()) {
        if (!e.stream_ids.includes(sub.stream_id)) continue;
        // subscriber_count moves by the users who really joined or left, when the list says which.
        const before: number[] | undefined = sub.subscribers;
        const changed = before === undefined ? e.user_ids.length : e.user_ids.filter((id: number) => before.includes(id) === (e.op === 'peer_remove')).length;
        if (sub.subscriber_count !== undefined) sub.subscriber_count += e.op === 'peer_add' ? changed : -changed;
        if (before !== undefined) sub.subscribers = e.op === 'peer_add' ? sortIds([...before, ...e.user_ids]) : before.filter((id: number) => !e.user_ids.includes(id));
      }
    } else if (e.op === 'update') {
      const sub = state.subscriptions?.find((s: any) => s.stream_id === e.stream_id);
      if (sub) sub[e.property] = e.value;
    } else if (e.op === 'add') {
      // Zulip's apply_event: new subscriptions join the list and leave the other two.
      const added = new Set<number>(e.subscriptions.map((s: any) => s.stream_id));
      const held = new Set<number>(state.subscriptions.map((s: any) => s.stream_id));
      for (const sub of e.subscriptions) if (!held.has(sub.stream_id)) state.subscriptions.push(structuredClone(sub));
      state.unsubscribed = state.unsubscribed.filter((s: any) => !added.has(s.stream_id));
      state.never_subscribed = state.never_subscribed.filter((s: any) => !added.has(s.stream_id));
    } else if (e.op === 'remove') {
      // The subscriptions left move to unsubscribed, without the client among their subscribers.
      const removed = new Set<number>(e.subscriptions.map((s: any) => s.stream_id));
      const gone = state.subscriptions.filter((s: any) => removed.has(s.stream_id));
      for (const sub of gone) {
        if (sub.subscribers !== undefined) sub.subscribers = sub.subscribers.filter((id: number) => id !== me);
        if (sub.subscriber_count !== undefined) sub.subscriber_count -= 1;
      }
      state.unsubscribed = [...state.unsubscribed, ...gone];
      state.subscriptions = state.subscriptions.filter((s: any) => !removed.has(s.stream_id));
    } else throw unknown(e);
  },
  stream(state, e) {
    if (e.op === 'create') {
      if (state.streams !== undefined) state.streams.push(...structuredClone(e.streams));
      // A public channel is one the client never subscribed to (its subscribers, if the lists carry them, come by peer_add).
      if (state.never_subscribed === undefined) return;
      for (const s of e.streams) if (!s.invite_only) state.never_subscribed.push({ ...structuredClone(s), ...(state.never_subscribed.some((x: any) => x.subscribers) || state.subscriptions.some((x: any) => x.subscribers) ? { subscribers: [] } : {}) });
    } else if (e.op === 'update') {
      // The property, with what comes along (a description's rendering, a policy's implications).
      for (const list of ['streams', 'subscriptions', 'unsubscribed', 'never_subscribed']) {
        for (const s of state[list] ?? []) {
          if (s.stream_id !== e.stream_id) continue;
          s[e.property] = e.value;
          for (const k of ['rendered_description', 'history_public_to_subscribers', 'is_web_public']) if (e[k] !== undefined) s[k] = e[k];
        }
      }
    } else if (e.op === 'delete') {
      const gone = new Set<number>(e.stream_ids ?? e.streams.map((s: any) => s.stream_id));
      for (const list of ['streams', 'subscriptions', 'unsubscribed', 'never_subscribed']) if (state[list]) state[list] = state[list].filter((s: any) => !gone.has(s.stream_id));
    } else throw unknown(e);
  },
  message(state, e, { me }) {
    const m = e.message;
    const flags: string[] = e.flags ?? [];
    if (state.messages !== undefined && !state.messages.some((x: any) => x.id === m.id)) state.messages.push({ ...structuredClone(m), flags });
    if (state.max_message_id !== undefined) state.max_message_id = Math.max(state.max_message_id, m.id);
    if (state.unread_msgs === undefined || flags.includes('read')) return;
    const raw = rawUnread(state);
    const wildcard = flags.includes('stream_wildcard_mentioned') || flags.includes('topic_wildcard_mentioned');
    if (m.type === 'stream') {
      const muted = channelMuted(state, m.stream_id);
      raw.where.set(m.id, { stream_id: m.stream_id, topic: m.subject });
      if (!muted) raw.counted.add(m.id);
      if (flags.includes('mentioned') || (wildcard && !muted)) raw.mentions.add(m.id);
    } else {
      raw.where.set(m.id, directPlace(m.display_recipient.map((r: any) => r.id).filter((id: number) => id !== me), me, m.sender_id));
      raw.counted.add(m.id);
      if (flags.includes('mentioned') || wildcard) raw.mentions.add(m.id);
    }
    writeUnread(state, raw);
  },
  delete_message(state, e) {
    // Zulip's apply_event: the ids leave the unread messages and the starred ones (and a message cache).
    const ids: number[] = e.message_ids ?? [e.message_id];
    if (state.messages !== undefined) state.messages = state.messages.filter((m: any) => !ids.includes(m.id));
    if (state.max_message_id !== undefined && ids.includes(state.max_message_id)) throw new Error('the client model cannot tell max_message_id after deleting the newest message (Zulip asks its database): teach it');
    if (Array.isArray(state.starred_messages)) state.starred_messages = state.starred_messages.filter((id: number) => !ids.includes(id));
    if (state.unread_msgs === undefined) return;
    const raw = rawUnread(state);
    for (const id of ids) (raw.where.delete(id), raw.mentions.delete(id), raw.counted.delete(id));
    writeUnread(state, raw);
  },
  reaction(state, e) {
    // Register holds no messages (Zulip's apply_event passes); a client's cached messages take it.
    const m = state.messages?.find((x: any) => x.id === e.message_id);
    if (!m) return;
    const same = (r: any): boolean => r.emoji_code === e.emoji_code && r.reaction_type === e.reaction_type && r.user_id === e.user_id;
    if (e.op === 'add') m.reactions = [...m.reactions, { emoji_name: e.emoji_name, emoji_code: e.emoji_code, reaction_type: e.reaction_type, user_id: e.user_id }];
    else if (e.op === 'remove') m.reactions = m.reactions.filter((r: any) => !same(r));
    else throw unknown(e);
  },
  submessage(state, e) {
    const m = state.messages?.find((x: any) => x.id === e.message_id);
    if (!m) return;
    m.submessages = [...m.submessages, { msg_type: e.msg_type, content: e.content, message_id: e.message_id, sender_id: e.sender_id, id: e.submessage_id }].sort((a: any, b: any) => a.id - b.id);
  },
  update_message(state, e) {
    // Content is not in register; a move changes where an unread message is, and an edit
    // sets or clears its mention by the event's flags.
    if (state.unread_msgs === undefined) return;
    const raw = rawUnread(state);
    if (e.new_stream_id !== undefined || e.subject !== undefined) {
      for (const id of e.message_ids) {
        const w = raw.where.get(id);
        if (!w || !('stream_id' in w)) continue;
        raw.where.set(id, { stream_id: e.new_stream_id ?? w.stream_id, topic: e.subject ?? w.topic });
      }
    }
    if (e.rendered_content !== undefined) {
      if (e.flags.includes('mentioned') && !e.flags.includes('read')) raw.mentions.add(e.message_id);
      else raw.mentions.delete(e.message_id);
    }
    writeUnread(state, raw);
  },
  update_message_flags(state, e, { me }) {
    const ids: number[] = e.messages;
    if (e.flag === 'starred' && Array.isArray(state.starred_messages)) {
      const set = new Set<number>(state.starred_messages);
      for (const id of ids) (e.op === 'add' ? set.add(id) : set.delete(id));
      state.starred_messages = [...set].sort((a, b) => a - b);
    }
    if (e.flag !== 'read' || state.unread_msgs === undefined) return;
    const raw = rawUnread(state);
    if (e.op === 'add') {
      for (const id of ids) (raw.where.delete(id), raw.mentions.delete(id), raw.counted.delete(id));
    } else if (e.op === 'remove') {
      // Marked unread: message_details says where each message goes.
      for (const id of ids) {
        const d = e.message_details[id];
        if (d.type === 'stream') {
          raw.where.set(id, { stream_id: d.stream_id, topic: d.topic });
          if (d.unmuted_stream_msg) raw.counted.add(id);
        } else (raw.where.set(id, directPlace(d.user_ids, me, me)), raw.counted.add(id));
        if (d.mentioned) raw.mentions.add(id);
      }
    } else throw unknown(e);
    writeUnread(state, raw);
  },
  realm_user(state, e, client) {
    const { me } = client;
    const person = e.person;
    // A deactivated user leaves every group's members, as Zulip's apply_event does.
    if (e.op === 'update' && person.is_active === false && Array.isArray(state.realm_user_groups)) {
      for (const g of state.realm_user_groups) g.members = g.members.filter((id: number) => id !== person.user_id);
    }
    if (state.realm_users === undefined) return;
    if (e.op === 'add') {
      const list = person.is_active === false ? 'realm_non_active_users' : 'realm_users';
      state.realm_users = state.realm_users.filter((u: any) => u.user_id !== person.user_id);
      state[list] = [...state[list].filter((u: any) => u.user_id !== person.user_id), person];
    } else if (e.op === 'update') {
      const user = findUser(state, person.user_id);
      const { user_id: _id, custom_profile_field: field, new_email: newEmail, ...fields } = person;
      Object.assign(user, fields);
      if (newEmail !== undefined) user.email = newEmail;
      if (fields.role !== undefined) Object.assign(user, roleFlags(fields.role));
      if (field) {
        if (field.value === null) delete user.profile_data[field.id];
        else user.profile_data[field.id] = field.rendered_value === undefined ? { value: field.value } : { value: field.value, rendered_value: field.rendered_value };
      }
      // Moved between the active and the deactivated, as Zulip's apply_event does.
      if (fields.is_active !== undefined && state.realm_non_active_users) {
        const [from, to] = fields.is_active ? ['realm_non_active_users', 'realm_users'] : ['realm_users', 'realm_non_active_users'];
        if (state[from].includes(user)) (state[from] = state[from].filter((u: any) => u !== user), state[to].push(user));
      }
      // The client's own top-level fields.
      if (person.user_id === me) {
        for (const k of ['full_name', 'delivery_email'] as const) if (fields[k] !== undefined && k in state) state[k] = fields[k];
        if (newEmail !== undefined && 'email' in state) state.email = newEmail;
        if (fields.role !== undefined && 'is_admin' in state) Object.assign(state, roleFlags(fields.role), { is_moderator: fields.role === 300 });
      }
    } else if (e.op === 'remove') {
      // No longer accessible (Zulip's apply_event): dropped with user_list_incomplete, else shown as an unknown user.
      const without = (list: any[]) => list.filter((u: any) => u.user_id !== person.user_id);
      const known = findUser(state, person.user_id) !== undefined;
      state.realm_users = without(state.realm_users);
      if (state.realm_non_active_users) state.realm_non_active_users = without(state.realm_non_active_users);
      if (known && !client.user_list_incomplete) state.realm_users.push(inaccessibleUser(person.user_id, client));
    } else throw unknown(e);
  },
  user_topic(state, e) {
    const key = (u: any): string => `${u.stream_id}\u0000${String(u.topic_name).toLowerCase()}`;
    const { id: _id, type: _type, ...topic } = e;
    const rest = state.user_topics.filter((u: any) => key(u) !== key(topic));
    state.user_topics = topic.visibility_policy === 0 ? rest : [...rest, topic];
  },
  user_group(state, e) {
    const groups: any[] = state.realm_user_groups;
    const group = groups.find((g) => g.id === e.group_id);
    // As in Zulip's apply_event, events about a group the client does not hold (a deactivated one) change nothing.
    if (e.op !== 'add' && !group) return;
    switch (e.op) {
      case 'add': state.realm_user_groups = [...groups, e.group].sort((a, b) => a.id - b.id); break;
      case 'remove': state.realm_user_groups = groups.filter((g) => g.id !== e.group_id); break;
      case 'update': Object.assign(group, e.data); break;
      case 'add_members': group.members = sortIds([...group.members, ...e.user_ids]); break;
      case 'remove_members': group.members = group.members.filter((id: number) => !e.user_ids.includes(id)); break;
      case 'add_subgroups': group.direct_subgroup_ids = sortIds([...group.direct_subgroup_ids, ...e.direct_subgroup_ids]); break;
      case 'remove_subgroups': group.direct_subgroup_ids = group.direct_subgroup_ids.filter((id: number) => !e.direct_subgroup_ids.includes(id)); break;
      default: throw unknown(e);
    }
  },
  heartbeat() {},
};

function unknown(e: Event): Error {
  return new Error(`the client model (test/client_model.ts) does not know event ${e.type}${e.op === undefined ? '' : `/${e.op}`}: teach it`);
}

/** Applies one event to a register state, as a Zulip client does (`client`: who, and how it registered). */
export function applyEvent(state: State, e: Event, client: number | Client): void {
  const apply = APPLY[e.type];
  if (!apply) throw unknown(e);
  apply(state, e, typeof client === 'number' ? { me: client } : client);
}

/** Sections whose order is not part of the state (Zulip's clients keep them by key). */
const UNORDERED: Partial<Record<string, (x: any) => string | number>> = {
  drafts: (d) => d.id,
  user_topics: (u) => `${u.stream_id}\u0000${u.topic_name}`,
  realm_users: (u) => u.user_id,
  realm_non_active_users: (u) => u.user_id,
  realm_bots: (b) => b.user_id,
  attachments: (a) => a.id,
  streams: (s) => s.stream_id,
  subscriptions: (s) => s.stream_id,
  unsubscribed: (s) => s.stream_id,
  never_subscribed: (s) => s.stream_id,
};

/** The sections `keys` names in `fresh`: a key ending in `*` is every section with that prefix. */
function expandKeys(keys: string[], fresh: State): string[] {
  const out = keys.flatMap((k) => (k.endsWith('*') ? Object.keys(fresh).filter((x) => x.startsWith(k.slice(0, -1))).sort() : [k]));
  // A section the fresh register lacks would compare undefined with undefined: a test that cannot fail.
  const missing = out.filter((k) => fresh[k] === undefined);
  if (missing.length > 0 || out.length === 0) throw new Error(`the fresh register has no ${missing.join(', ') || keys.join(', ')}: compare sections it fetches`);
  return out;
}

/** A state for comparison: the sections asked for, unordered ones sorted by their key. */
function comparable(state: State, keys: string[]): State {
  const out: State = {};
  for (const k of keys) {
    const v = state[k];
    const sortKey = UNORDERED[k];
    out[k] = sortKey && Array.isArray(v) ? [...v].sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : sortKey(a) > sortKey(b) ? 1 : 0)) : v;
  }
  return out;
}

/** How a test registers: the event types (fetched too), and other register parameters. */
type RegisterParams = Record<string, unknown>;

/** `POST /register` for `types` (as event_types and fetch_event_types) with `params`: the state, with its queue_id. */
export async function register(f: ChatFixture, who: Credentials, types: string[], params: RegisterParams = {}): Promise<State> {
  const reg = await f.call(who, 'POST', '/api/v1/register', { event_types: types, fetch_event_types: types, ...params });
  if (reg.status !== 200) throw new Error(reg.body);
  return reg.json;
}

/** The client a register's parameters describe, for `applyEvent`. */
function clientOf(who: Credentials, params: RegisterParams): Client {
  const caps = typeof params.client_capabilities === 'string' ? JSON.parse(params.client_capabilities) : params.client_capabilities;
  return { me: who.user_id, slim_presence: params.slim_presence === true || params.slim_presence === 'true' || caps?.simplified_presence_events === true };
}

/**
 * The second half of `verify_action`: applies every event on `reg`'s queue to a copy of `reg`
 * (`who`'s register with `params`, which fetched `types`: `register` makes one), registers
 * again and compares the sections `keys` (`realm_*`: every section so named). Returns the events.
 */
export async function verifyState(t: Test, f: ChatFixture, who: Credentials, reg: State, types: string[], keys: string[], params: RegisterParams = {}): Promise<Event[]> {
  await settle();
  const state: State = structuredClone(reg);
  const events = await queueEvents(f, who, reg.queue_id);
  const client = clientOf(who, params);
  for (const e of events) applyEvent(state, e, client);
  const fresh = await f.call(who, 'POST', '/api/v1/register', { ...params, fetch_event_types: types });
  if (fresh.status !== 200) throw new Error(fresh.body);
  const compared = expandKeys(keys, fresh.json);
  t.same(comparable(state, compared), comparable(fresh.json, compared), `register plus ${events.length} events equals a fresh register (${keys.join(', ')})`);
  return events;
}

/**
 * Zulip's `verify_action`: registers `who` for `types`, runs `action`, applies every event
 * the queue got, registers again and compares the sections `keys`. Returns the events, for
 * tests that also check them.
 */
export async function verifyAction(t: Test, f: ChatFixture, who: Credentials, types: string[], keys: string[], action: () => Promise<unknown>, params: RegisterParams = {}): Promise<Event[]> {
  const reg = await register(f, who, types, params);
  await action();
  return verifyState(t, f, who, reg, types, keys, params);
}
