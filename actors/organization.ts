/**
 * The organization actor: the user directory and roles, the channel directory, and
 * the organization's direct messages. It is the shard unit: nothing in it refers to
 * another organization.
 */
import type { Fact } from './facts.js';
import { domainLogic, type Decision, type DecideEnv } from './logic.js';
import { decideCreateUser, decideSetUserActive, type CreateUser, type SetUserActive } from './org_users.js';
import { decideSubscribe, decideUnsubscribe, type Subscribe, type Unsubscribe } from './subscriptions.js';
import { decideSendDirect, type SendDirect } from './direct_messages.js';
import type { World } from './world.js';
import type { ChannelRecord, MessageRecord, OrgRecord, UserRecord } from './types.js';

export { makeUser } from './org_users.js';

/** State of one organization actor. */
export interface OrgContext {
  seq: number;
  org: OrgRecord;
  users: Map<number, UserRecord>;
  /** Lower-cased API email to user id. */
  byEmail: Map<string, number>;
  /** Lower-cased channel name to channel id. */
  channelsByName: Map<string, number>;
  /** Next free id for users, channels and recipients, each counted separately. */
  nextUserId: number;
  nextChannelId: number;
  nextRecipientId: number;
  /** Direct messages, by id, in id order. */
  directMessages: Map<number, MessageRecord>;
  /** Each user's direct message ids, ascending. */
  directIdsByUser: Map<number, number[]>;
  /** Recipient id of each group conversation, keyed by its sorted user ids. */
  groupRecipients: Map<string, number>;
  /** Which channel each channel message lives in. */
  messageChannel: Map<number, number>;
}

export type OrgCommand = CreateUser | SetUserActive | Subscribe | Unsubscribe | SendDirect;

/** Context before the organization's `OrgCreated` fact is applied. */
export function emptyOrg(id: number): OrgContext {
  return {
    seq: 0,
    org: { id, name: '', subdomain: '', description: '', date_created: 0, deactivated: false },
    users: new Map(),
    byEmail: new Map(),
    channelsByName: new Map(),
    nextUserId: 1,
    nextChannelId: 1,
    nextRecipientId: 1,
    directMessages: new Map(),
    directIdsByUser: new Map(),
    groupRecipients: new Map(),
    messageChannel: new Map(),
  };
}

function addUser(ctx: OrgContext, user: UserRecord): void {
  ctx.users.set(user.user_id, { ...user });
  ctx.byEmail.set(user.email.toLowerCase(), user.user_id);
  ctx.nextUserId = Math.max(ctx.nextUserId, user.user_id + 1);
  ctx.nextRecipientId = Math.max(ctx.nextRecipientId, user.recipient_id + 1);
}

function addChannel(ctx: OrgContext, channel: ChannelRecord): void {
  ctx.channelsByName.set(channel.name.toLowerCase(), channel.stream_id);
  ctx.nextChannelId = Math.max(ctx.nextChannelId, channel.stream_id + 1);
  ctx.nextRecipientId = Math.max(ctx.nextRecipientId, channel.recipient_id + 1);
}

function reduce(ctx: OrgContext, fact: Fact): void {
  switch (fact.type) {
    case 'OrgCreated':
      ctx.org = { ...fact.org };
      addUser(ctx, fact.owner);
      break;
    case 'UserCreated':
      addUser(ctx, fact.user);
      break;
    case 'OrgActivationChanged':
      ctx.org.deactivated = !fact.active;
      break;
    case 'UserActivationChanged': {
      const user = ctx.users.get(fact.user_id);
      if (user) user.is_active = fact.active;
      break;
    }
    case 'ChannelCreated':
      addChannel(ctx, fact.channel);
      break;
    case 'SubscriptionsAdded':
      for (const channel of fact.created) addChannel(ctx, channel);
      break;
    case 'MessageSent': {
      const m = fact.message;
      if (m.stream_id !== null) {
        ctx.messageChannel.set(m.id, m.stream_id);
        break;
      }
      ctx.directMessages.set(m.id, m);
      for (const uid of m.dm_user_ids ?? []) {
        let ids = ctx.directIdsByUser.get(uid);
        if (!ids) ctx.directIdsByUser.set(uid, (ids = []));
        ids.push(m.id);
      }
      if ((m.dm_user_ids?.length ?? 0) > 2) ctx.groupRecipients.set(m.dm_user_ids!.join(','), m.recipient_id);
      ctx.nextRecipientId = Math.max(ctx.nextRecipientId, m.recipient_id + 1);
      break;
    }
    default:
      break;
  }
}

/** Builds the organization actor's logic; decisions may read other actors through `world`. */
export function orgLogic(world: World) {
  function decide(ctx: OrgContext, command: OrgCommand, env: DecideEnv): Decision {
    switch (command.type) {
      case 'CREATE_USER':
        return decideCreateUser(ctx, command, env);
      case 'SET_USER_ACTIVE':
        return decideSetUserActive(ctx, command);
      case 'SUBSCRIBE':
        return decideSubscribe(ctx, command, env, world);
      case 'UNSUBSCRIBE':
        return decideUnsubscribe(ctx, command, world);
      case 'SEND_DIRECT':
        return decideSendDirect(ctx, command, env);
    }
  }
  return domainLogic<OrgContext, OrgCommand>({ decide, reduce });
}

/** Looks a user up by API email, case-insensitively. */
export function userByEmail(ctx: OrgContext, email: string): UserRecord | undefined {
  const id = ctx.byEmail.get(email.toLowerCase());
  return id === undefined ? undefined : ctx.users.get(id);
}
