/**
 * Topic visibility (Zulip's `zerver/actions/user_topics.py`): a user mutes, unmutes
 * or follows a channel topic, or goes back to the channel's default. The user's
 * actor keeps the policies; `user_topic` events tell the user's other clients; the
 * `user_topics` (and legacy `muted_topics`) sections of `/register` list them.
 */
import { area, command, userFact } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest } from '../shared/errors.js';
import { hasContentAccess } from '../kinds/channel.js';
import { userTopicKey, type UserContext, type UserTopic } from '../kinds/user.js';
import { EMPTY_TOPIC_DISPLAY_NAME, topicNamed } from '../rules/messages.js';
import { eventJson } from '../render/events.js';
import { userState } from '../core/state_slices.js';

declare module '../kinds/user.js' {
  interface UserContext {
    /** The user's muted, unmuted and followed topics, by `userTopicKey`. */
    topics: Map<string, UserTopic>;
  }
}

userState({
  topics: { empty: () => new Map(), save: (topics) => [...topics.values()], load: (list: UserTopic[]) => new Map(list.map((t) => [userTopicKey(t.stream_id, t.topic_name), t])) },
});

/** Zulip's `UserTopic.VisibilityPolicy`. */
export const VisibilityPolicy = { INHERIT: 0, MUTED: 1, UNMUTED: 2, FOLLOWED: 3 } as const;

/** A user's policy for a topic changed; `visibility_policy` 0 removes the entry. */
export interface UserTopicChanged { type: 'UserTopicChanged'; org: number; user_id: number; topic: UserTopic }

/**
 * Set the caller's policy for a topic. `legacy` is the old mute endpoint's
 * expectation (it refuses muting a muted topic, and unmuting one that is not muted).
 */
export interface SetUserTopic { type: 'SET_USER_TOPIC'; user_id: number; org: number; stream_id: number; topic: string; visibility_policy: number; legacy?: 'mute' | 'unmute' }

/** The fact that sets a user's policy for a topic back to the default, or null when they have none. */
export function topicPolicyReset(ctx: UserContext, org: number, streamId: number, topic: string, now: number): UserTopicChanged | null {
  const current = ctx.topics.get(userTopicKey(streamId, topicNamed(topic)));
  if (!current || current.visibility_policy === VisibilityPolicy.INHERIT) return null;
  return { type: 'UserTopicChanged', org, user_id: ctx.user_id, topic: { stream_id: streamId, topic_name: current.topic_name, last_updated: now, visibility_policy: VisibilityPolicy.INHERIT } };
}

export const setUserTopic = command({
  type: 'SET_USER_TOPIC',
  actor: 'user',
  decide(ctx: UserContext, c: SetUserTopic, env: DecideEnv, view: StateView): Decision<Record<string, never>, UserTopicChanged> {
    if (!(Object.values(VisibilityPolicy) as number[]).includes(c.visibility_policy)) throw badRequest('Invalid visibility_policy');
    const topic = topicNamed(c.topic);
    const current = ctx.topics.get(userTopicKey(c.stream_id, topic));
    // Going back to the default needs no access to the channel (it may have been left since).
    if (c.visibility_policy !== VisibilityPolicy.INHERIT) {
      const ch = view.channel(c.org, c.stream_id);
      const user = view.org(c.org)?.users.get(ctx.user_id);
      if (!ch || !user || !hasContentAccess(ch, user)) throw badRequest('Invalid channel ID');
    }
    if (c.legacy === 'mute' && current?.visibility_policy === VisibilityPolicy.MUTED) throw badRequest('Topic already muted');
    if (c.legacy === 'unmute' && current?.visibility_policy !== VisibilityPolicy.MUTED) throw badRequest('Topic is not muted');
    if ((current?.visibility_policy ?? VisibilityPolicy.INHERIT) === c.visibility_policy) return { facts: [], value: {} };
    const entry: UserTopic = { stream_id: c.stream_id, topic_name: current?.topic_name ?? topic, last_updated: env.now(), visibility_policy: c.visibility_policy };
    return { facts: [{ type: 'UserTopicChanged', org: c.org, user_id: ctx.user_id, topic: entry }], value: {} };
  },
});

const userTopicChanged = userFact<UserTopicChanged>({
  type: 'UserTopicChanged',
  apply(ctx, f) {
    const key = userTopicKey(f.topic.stream_id, f.topic.topic_name);
    if (f.topic.visibility_policy === VisibilityPolicy.INHERIT) ctx.topics.delete(key);
    else ctx.topics.set(key, { ...f.topic });
  },
  notify(f, seq) {
    const built: ReturnType<typeof eventJson>[] = [];
    return [{
      org: f.org,
      seq,
      type: 'user_topic',
      user_ids: [f.user_id],
      event: (_userId, { empty_topic_name: emptyTopicName }) => {
        const variant = emptyTopicName || f.topic.topic_name !== '' ? 0 : 1;
        return (built[variant] ??= eventJson('user_topic', { ...f.topic, topic_name: variant === 1 ? EMPTY_TOPIC_DISPLAY_NAME : f.topic.topic_name }));
      },
    }];
  },
});

/** The user's topic policies, as `/register`'s `user_topics` lists them. */
export function listUserTopics(view: StateView, org: number, userId: number, emptyTopicName: boolean): UserTopic[] {
  return [...(view.user(org, userId)?.topics.values() ?? [])]
    .map((t) => ({ ...t, topic_name: t.topic_name === '' && !emptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : t.topic_name }))
    .sort((a, b) => a.stream_id - b.stream_id || a.last_updated - b.last_updated);
}

export const userTopics = area({
  name: 'user topics',
  commands: [setUserTopic],
  facts: [userTopicChanged],
  register: [
    { types: ['user_topic'], fill: (state, r, view) => void (state.user_topics = listUserTopics(view, r.org.id, r.user.user_id, r.caps.empty_topic_name)) },
    {
      // The legacy form: [channel name, topic, last updated] of muted topics.
      types: ['muted_topics'],
      fill(state, r, view) {
        state.muted_topics = listUserTopics(view, r.org.id, r.user.user_id, r.caps.empty_topic_name)
          .filter((t) => t.visibility_policy === VisibilityPolicy.MUTED)
          .map((t) => [view.channel(r.org.id, t.stream_id)?.channel.name ?? '', t.topic_name, t.last_updated]);
      },
    },
  ],
});
