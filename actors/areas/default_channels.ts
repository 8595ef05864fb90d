/**
 * Default channels (Zulip's `add_default_stream` and `remove_default_stream` in
 * zerver/views/streams.py, `zerver/actions/default_streams.py`): the public channels
 * new users join. Administrators only. A channel's default status is its record's
 * `is_default`; archiving a channel takes it out (see `channels.ts`). Every change
 * sends `default_streams` with the ids of all default channels to everyone but guests,
 * who also see none in `/register`'s `realm_default_streams`, as in Zulip.
 */
import { area, command, fact, type Delivery } from '../core/area.js';
import type { Decision, DecideEnv } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { adminRequired, badRequest } from '../shared/errors.js';
import { canAccessChannel, hasContentAccess, type ChannelContext } from '../kinds/channel.js';
import { activeUsersWhere, eventJson } from '../render/events.js';
import { Role } from '../shared/types.js';

/** Zulip's answer when a request would leave a channel both private and default (`PATCH /streams/{id}`, `POST /channels/create`). */
export const DEFAULT_CHANNEL_PRIVATE = 'A default channel cannot be private.';

/** A channel became a default channel, or stopped being one. */
export interface DefaultChannelChanged { type: 'DefaultChannelChanged'; org: number; stream_id: number; is_default: boolean }

/** Make a channel a default channel, or stop it being one (`POST`/`DELETE /default_streams`). */
export interface SetDefaultChannel { type: 'SET_DEFAULT_CHANNEL'; stream_id: number; org: number; actor_id: number; is_default: boolean }

/** The ids of the organization's default channels, ascending. */
export function defaultChannelIds(view: StateView, org: number): number[] {
  const out: number[] = [];
  for (const id of view.channelIdsOf(org)) {
    const ch = view.channel(org, id)!;
    // Channels archived before archiving cleared `is_default` still carry it.
    if (ch.channel.is_default && !ch.channel.is_archived) out.push(id);
  }
  return out.sort((a, b) => a - b);
}

/** The `default_streams` event with the organization's default channels as they are now, to everyone but guests. */
export function defaultChannelsDelivery(view: StateView, org: number, seq: number): Delivery {
  return {
    org, seq, type: 'default_streams', user_ids: activeUsersWhere(view, org, (u) => u.role !== Role.GUEST),
    event: eventJson('default_streams', { default_streams: defaultChannelIds(view, org) }),
  };
}

export const setDefaultChannel = command({
  type: 'SET_DEFAULT_CHANNEL',
  actor: 'channel',
  decide(ch: ChannelContext, c: SetDefaultChannel, _env: DecideEnv, view: StateView): Decision<Record<string, never>, DefaultChannelChanged> {
    const actor = view.org(c.org)?.users.get(c.actor_id);
    if (!actor || !actor.is_active || actor.role > Role.ADMIN) throw adminRequired();
    // Zulip's access_stream_by_id: content access to add, metadata access to remove; never an archived channel.
    const access = c.is_default ? hasContentAccess(ch, actor) : canAccessChannel(actor, ch.channel, ch.subscribers);
    if (!access || ch.channel.is_archived) throw badRequest('Invalid channel ID');
    if (c.is_default && ch.channel.invite_only) throw badRequest('Private channels cannot be made default.');
    // Adding a default channel again changes nothing and tells no one; removing always tells, as in Zulip.
    if (c.is_default && ch.channel.is_default) return { facts: [], value: {} };
    return { facts: [{ type: 'DefaultChannelChanged', org: c.org, stream_id: ch.channel.stream_id, is_default: c.is_default }], value: {} };
  },
});

const defaultChannelChanged = fact<DefaultChannelChanged>({
  type: 'DefaultChannelChanged',
  apply: {
    channel(ctx, f) {
      ctx.channel = { ...ctx.channel, is_default: f.is_default };
    },
  },
  route: (f, to) => to.channel(f.org, f.stream_id),
  notify: (f, seq, view) => [defaultChannelsDelivery(view, f.org, seq)],
});

export const defaultChannels = area({
  name: 'default_channels',
  commands: [setDefaultChannel],
  facts: [defaultChannelChanged],
  register: [{ types: ['default_streams'], fill: (state, r, view) => void (state.realm_default_streams = r.user.role === Role.GUEST ? [] : defaultChannelIds(view, r.org.id)) }],
});
