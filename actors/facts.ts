/**
 * Facts: what happened. A fact is the only thing that changes actor state, the only
 * thing written to the log, and the source of every client event. Facts carry every
 * value the decision step chose (ids, timestamps, keys), so replaying them is exact.
 */
import type { BoardMessage, BoardSwitch, GuestbookEntry } from './board_types.js';
import type { NarrowTerm } from './narrow.js';
import type { ChannelRecord, MessageRecord, OrgRecord, SubscriptionProps, UserRecord } from './types.js';

/** An organization and its first owner came into being. */
export interface OrgCreated { type: 'OrgCreated'; org: OrgRecord; owner: UserRecord }
/** An organization was deactivated (`active` false) or reactivated by an operator. */
export interface OrgActivationChanged { type: 'OrgActivationChanged'; org: number; active: boolean }
/** A user joined an organization. */
export interface UserCreated { type: 'UserCreated'; org: number; user: UserRecord; acting_user_id: number | null }
/** A user was deactivated (`active` false) or reactivated (`active` true). */
export interface UserActivationChanged { type: 'UserActivationChanged'; org: number; user_id: number; active: boolean; acting_user_id: number | null }
/** A channel was created. */
export interface ChannelCreated { type: 'ChannelCreated'; org: number; channel: ChannelRecord }
/** Users were subscribed to a channel, each with their subscription settings. */
export interface Subscribed {
  type: 'Subscribed';
  org: number;
  stream_id: number;
  user_ids: number[];
  props: SubscriptionProps[];
  acting_user_id: number;
}
/** Users left a channel. */
export interface Unsubscribed { type: 'Unsubscribed'; org: number; stream_id: number; user_ids: number[]; acting_user_id: number }

/** The users one subscription request added to one channel, each with their settings. */
export interface ChannelAdditions { stream_id: number; user_ids: number[]; props: SubscriptionProps[] }
/** The users one unsubscription request removed from one channel. */
export interface ChannelRemovals { stream_id: number; user_ids: number[] }

/**
 * What one `POST /users/me/subscriptions` did: the channels it created and, per
 * channel, the users it added. One fact per request (or per few megabytes of it),
 * so that its events are batched as Zulip batches them and replay does per-request,
 * not per-channel, work. Earlier logs hold `ChannelCreated` + `Subscribed` per
 * channel instead; those still replay.
 */
export interface SubscriptionsAdded {
  type: 'SubscriptionsAdded';
  org: number;
  /** Channels the request created, in request order; they exist before anyone is added. */
  created: ChannelRecord[];
  /** Per channel, in request order; a channel appears at most once. */
  additions: ChannelAdditions[];
  acting_user_id: number;
}
/** What one `DELETE /users/me/subscriptions` did (earlier logs: `Unsubscribed` per channel). */
export interface SubscriptionsRemoved {
  type: 'SubscriptionsRemoved';
  org: number;
  /** Per channel, in request order; a channel appears at most once. */
  removals: ChannelRemovals[];
  acting_user_id: number;
}
/**
 * A message was sent. Its channel recipients are the channel's subscribers at this
 * point of the log, so they are not repeated here.
 */
export interface MessageSent {
  type: 'MessageSent';
  org: number;
  message: MessageRecord;
  /** Users mentioned by name. */
  mentioned: number[];
  /** A wildcard mention (`@**all**`, `@**topic**`), if any. */
  wildcard: 'stream' | 'topic' | null;
  /** Whether the message arrives already read for its sender. */
  read_by_sender: boolean;
}
/** A user changed a personal flag on some messages. */
export interface FlagsUpdated {
  type: 'FlagsUpdated';
  org: number;
  user_id: number;
  op: 'add' | 'remove';
  flag: string;
  messages: number[];
}

/** A client registered an event queue. */
export interface QueueRegistered {
  type: 'QueueRegistered';
  org: number;
  user_id: number;
  queue_id: string;
  event_types: string[] | null;
  narrow: NarrowTerm[];
  client: string;
  lifespan_ms: number;
  empty_topic_name: boolean;
}
/** Event queues went away: deleted by their client, idle too long, or overflowed. */
export interface QueuesDropped { type: 'QueuesDropped'; queue_ids: string[]; reason: string }
/** Parked polls of these queues were due a heartbeat event. */
export interface HeartbeatsDue { type: 'HeartbeatsDue'; queue_ids: string[] }
/** The server started again; every queue gets a `restart` event. */
export interface ServerRestarted { type: 'ServerRestarted' }

/** Facts about event queues: their contents are a function of the fact sequence, so they survive crashes. */
export type QueueFact = QueueRegistered | QueuesDropped | HeartbeatsDue | ServerRestarted;

/** Facts about organizations and what lives in them. */
export type DomainFact =
  | OrgCreated | OrgActivationChanged | UserCreated | UserActivationChanged | ChannelCreated | Subscribed | Unsubscribed
  | SubscriptionsAdded | SubscriptionsRemoved | MessageSent | FlagsUpdated;

/**
 * A message was posted to the public board. When it was published through the GET
 * compatibility path, `nonceHash` is the SHA-256 of the nonce it used: the nonce is
 * consumed by this very record, so no crash or replay can separate the two.
 */
export interface BoardMessagePosted { type: 'BoardMessagePosted'; message: BoardMessage; nonceHash: string | null }
/** A visitor signed the guestbook. */
export interface GuestbookEntryPosted { type: 'GuestbookEntryPosted'; entry: GuestbookEntry }
/** An operator turned a board switch on or off. */
export interface BoardSwitchChanged { type: 'BoardSwitchChanged'; name: BoardSwitch; on: boolean }
/** A write-challenge nonce was issued; only its SHA-256 is recorded, never the nonce. */
export interface NonceIssued { type: 'NonceIssued'; hash: string; issuedAt: number; expiresAt: number }

/** Facts about the public message board. */
export type BoardFact = BoardMessagePosted | GuestbookEntryPosted | BoardSwitchChanged | NonceIssued;

export type Fact = DomainFact | QueueFact | BoardFact;
export type FactType = Fact['type'];

/** A fact stamped with its place in the server-wide log order. */
export interface Stamped { seq: number; fact: Fact }

/** A bulk subscription fact looked up by channel and by user, built once per fact object. */
export interface SubscriptionIndex {
  /** Channels the fact created, by id. */
  created: Map<number, ChannelRecord>;
  /** The users added to (or removed from) each channel, by channel id, with their settings when added. */
  byChannel: Map<number, ChannelAdditions | ChannelRemovals>;
  /** Per user, in fact order: the channels they joined or left, and their settings when they joined. */
  byUser: Map<number, Array<{ stream_id: number; props: SubscriptionProps | null }>>;
}

const indexes = new WeakMap<SubscriptionsAdded | SubscriptionsRemoved, SubscriptionIndex>();

/**
 * The index of a bulk subscription fact. Every channel and user actor the fact
 * concerns reads its own part from it, so applying a fact of C channels and P users
 * costs O(C + P + pairs), not O(C x P).
 */
export function subscriptionIndex(fact: SubscriptionsAdded | SubscriptionsRemoved): SubscriptionIndex {
  let index = indexes.get(fact);
  if (index) return index;
  index = { created: new Map(), byChannel: new Map(), byUser: new Map() };
  const parts: Array<ChannelAdditions | ChannelRemovals> = fact.type === 'SubscriptionsAdded' ? fact.additions : fact.removals;
  if (fact.type === 'SubscriptionsAdded') for (const c of fact.created) index.created.set(c.stream_id, c);
  for (const part of parts) {
    index.byChannel.set(part.stream_id, part);
    const props = 'props' in part ? part.props : null;
    for (let i = 0; i < part.user_ids.length; i++) {
      const id = part.user_ids[i];
      let mine = index.byUser.get(id);
      if (!mine) index.byUser.set(id, (mine = []));
      mine.push({ stream_id: part.stream_id, props: props ? props[i] : null });
    }
  }
  indexes.set(fact, index);
  return index;
}
