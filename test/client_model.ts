/**
 * One client model for the convergence tests, like Zulip's `apply_event`
 * (zerver/lib/events.py): the state `POST /register` gave plus the events since equals a
 * fresh `register`. `applyEvent` knows the event types below and throws on any other, so a
 * test that meets a new type fails until the model learns it; `verifyAction` is Zulip's
 * `verify_action`: register, act, apply the events, register again, compare.
 *
 * Tests still being moved to it keep a model of their own for now (events.test.ts and
 * others); every new convergence test uses this one.
 */
import type { Test } from 'tap';
import { queueEvents, settle, type ChatFixture, type Credentials } from './helpers.js';

type State = Record<string, any>;
type Event = Record<string, any>;

const byKey = <T>(list: T[], key: (x: T) => unknown, value: unknown): number => list.findIndex((x) => key(x) === value);

/** Replaces, adds or removes one element of a list section, by a key. */
function upsert<T>(list: T[], key: (x: T) => unknown, item: T): T[] {
  const at = byKey(list, key, key(item));
  return at < 0 ? [...list, item] : list.map((x, i) => (i === at ? item : x));
}

const APPLY: Record<string, (state: State, e: Event, me: number) => void> = {
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
    if (e.op === 'update') state[`realm_${e.property}`] = e.value;
    else if (e.op === 'update_dict') for (const [k, v] of Object.entries(e.data)) state[`realm_${k}`] = v;
    else throw unknown(e);
  },
  user_topic(state, e) {
    const key = (u: any): string => `${u.stream_id}\u0000${String(u.topic_name).toLowerCase()}`;
    const { id: _id, type: _type, ...topic } = e;
    const rest = state.user_topics.filter((u: any) => key(u) !== key(topic));
    state.user_topics = topic.visibility_policy === 0 ? rest : [...rest, topic];
  },
  update_message_flags(state, e) {
    const ids: number[] = e.messages;
    if (e.flag === 'starred' && Array.isArray(state.starred_messages)) {
      const set = new Set<number>(state.starred_messages);
      for (const id of ids) (e.op === 'add' ? set.add(id) : set.delete(id));
      state.starred_messages = [...set].sort((a, b) => a - b);
    }
    if (e.flag === 'read' && state.unread_msgs) {
      if (e.op !== 'add') throw unknown(e); // marking unread: teach the model message_details when a test needs it
      const gone = new Set(ids);
      const u = state.unread_msgs;
      for (const list of [u.streams, u.pms, u.huddles]) {
        for (const entry of list) entry.unread_message_ids = entry.unread_message_ids.filter((id: number) => !gone.has(id));
      }
      u.streams = u.streams.filter((s: any) => s.unread_message_ids.length > 0);
      u.pms = u.pms.filter((s: any) => s.unread_message_ids.length > 0);
      u.huddles = u.huddles.filter((s: any) => s.unread_message_ids.length > 0);
      u.mentions = u.mentions.filter((id: number) => !gone.has(id));
      u.count = [...u.streams, ...u.pms, ...u.huddles].reduce((n: number, s: any) => n + s.unread_message_ids.length, 0);
    }
  },
  realm_user(state, e) {
    // The realm_users section itself: teach the model when a convergence test fetches it.
    if (state.realm_users !== undefined) throw unknown(e);
    // A deactivated user leaves every group's members, as Zulip's apply_event does.
    if (e.op === 'update' && e.person.is_active === false && Array.isArray(state.realm_user_groups)) {
      for (const g of state.realm_user_groups) g.members = g.members.filter((id: number) => id !== e.person.user_id);
    }
  },
  user_group(state, e) {
    const groups: any[] = state.realm_user_groups;
    const sortIds = (ids: Iterable<number>): number[] => [...new Set(ids)].sort((a, b) => a - b);
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

/** Applies one event to a register state, as a Zulip client does. */
export function applyEvent(state: State, e: Event, me: number): void {
  const apply = APPLY[e.type];
  if (!apply) throw unknown(e);
  apply(state, e, me);
}

/** Sections whose order is not part of the state (Zulip's clients keep them by key). */
const UNORDERED: Partial<Record<string, (x: any) => string | number>> = {
  drafts: (d) => d.id,
  user_topics: (u) => `${u.stream_id}\u0000${u.topic_name}`,
};

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

/**
 * Zulip's `verify_action`: registers `who` for `types`, runs `action`, applies every event
 * the queue got, registers again and compares the sections `types` fetch (or `keys`).
 * Returns the events, for tests that also check them.
 */
export async function verifyAction(t: Test, f: ChatFixture, who: Credentials, types: string[], keys: string[], action: () => Promise<unknown>): Promise<Event[]> {
  const reg = await f.call(who, 'POST', '/api/v1/register', { event_types: types, fetch_event_types: types });
  if (reg.status !== 200) throw new Error(reg.body);
  const state: State = structuredClone(reg.json);
  await action();
  await settle();
  const events = await queueEvents(f, who, reg.json.queue_id);
  for (const e of events) applyEvent(state, e, who.user_id);
  const fresh = await f.call(who, 'POST', '/api/v1/register', { fetch_event_types: types });
  t.same(comparable(state, keys), comparable(fresh.json, keys), `register plus ${events.length} events equals a fresh register (${keys.join(', ')})`);
  return events;
}
