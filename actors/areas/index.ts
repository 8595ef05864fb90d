/**
 * Every area of the domain, in one list. The runtime routes commands and facts,
 * derives events and builds `/register` by looking these declarations up; adding an
 * area is one module and one line here.
 */
import type { CommandDef, Delivery, FactDef, InitialStateRequest, RegisterSection } from '../core/area.js';

export type { Delivery } from '../core/area.js';
import type { Stamped as AnyStamped } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { sealStateSlices } from '../core/state_slices.js';
import { alertWords } from './alert_words.js';
import { attachments } from './attachments.js';
import { board } from './board.js';
import { botStorage } from './bot_storage.js';
import { bots } from './bots.js';
import { channelFolders } from './channel_folders.js';
import { channels } from './channels.js';
import { defaultChannels } from './default_channels.js';
import { topicDeletion } from './topic_deletion.js';
import { deletionJobs } from './deletion_jobs.js';
import { messageRetention } from './message_retention.js';
import { drafts } from './drafts.js';
import { eventQueues } from './event_queues.js';
import { flags } from './flags.js';
import { fullMembers } from './full_members.js';
import { invites } from './invites.js';
import { linkifiers } from './linkifiers.js';
import { messageEdits } from './message_edits.js';
import { messages } from './messages.js';
import { messageDeletion } from './message_deletion.js';
import { messageReports } from './message_reports.js';
import { mutedUsers } from './muted_users.js';
import { navigationViews } from './navigation_views.js';
import { organizations } from './organizations.js';
import { playgrounds } from './playgrounds.js';
import { presence } from './presence.js';
import { profileFields } from './profile_fields.js';
import { pushDevices } from './push_devices.js';
import { reactions } from './reactions.js';
import { savedSnippets } from './saved_snippets.js';
import { realm } from './realm.js';
import { realmDomains } from './realm_domains.js';
import { realmEmoji } from './realm_emoji.js';
import { realmExports } from './realm_exports.js';
import { reminders } from './reminders.js';
import { scheduledMessages } from './scheduled_messages.js';
import { settings } from './settings.js';
import { submessages } from './submessages.js';
import { subscriptions } from './subscriptions.js';
import { legacySubscriptions } from './subscriptions_legacy.js';
import { subscriptionSettings } from './subscription_settings.js';
import { typing } from './typing.js';
import { userAdmin } from './user_admin.js';
import { userGroups } from './user_groups.js';
import { userStatus } from './user_status.js';
import { userTopics } from './user_topics.js';
import { users } from './users.js';

export const AREAS = [organizations, realm, realmDomains, realmEmoji, linkifiers, playgrounds, realmExports, alertWords, users, userAdmin, userGroups, fullMembers, bots, invites, profileFields, settings, userStatus, presence, subscriptions, legacySubscriptions, subscriptionSettings, channels, defaultChannels, channelFolders, messages, messageDeletion, deletionJobs, messageReports, topicDeletion, messageRetention, scheduledMessages, reminders, messageEdits, attachments, reactions, submessages, flags, userTopics, drafts, savedSnippets, navigationViews, mutedUsers, botStorage, pushDevices, typing, eventQueues, board] as const;

type Areas = (typeof AREAS)[number];
type CommandDefs = Areas['commands'][number];
type FactDefs = Areas['facts'][number];

type InputOf<D> = D extends CommandDef<any, infer C, any, any> ? C : never;
type FactOf<D> = D extends FactDef<infer F> ? F : never;

/** Every command, as the data its caller sends. */
export type Command = InputOf<CommandDefs>;
/** Every fact: what the log holds. */
export type Fact = FactOf<FactDefs>;
export type FactType = Fact['type'];
/** A fact stamped with its place in the server-wide log order. */
export type Stamped = AnyStamped<Fact>;

type DefFor<C extends Command> = Extract<CommandDefs, { type: C['type'] }>;
/** What a command resolves with. */
export type ResultOf<C extends Command> = DefFor<C> extends CommandDef<any, any, infer R, any> ? R : never;

/** Commands by type. */
export const COMMANDS: ReadonlyMap<string, CommandDef> = new Map(AREAS.flatMap((a) => a.commands.map((c) => [c.type, c as CommandDef] as const)));
/** Facts by type. */
export const FACTS: ReadonlyMap<string, FactDef> = new Map(AREAS.flatMap((a) => a.facts.map((f) => [f.type, f as FactDef] as const)));

for (const a of AREAS) {
  for (const c of a.commands) if (COMMANDS.get(c.type) !== c) throw new Error(`Command ${c.type} is declared twice`);
  for (const f of a.facts) if (FACTS.get(f.type) !== f) throw new Error(`Fact ${f.type} is declared twice`);
}

// Every area has declared its state slices: the kinds may read them.
sealStateSlices();

const SECTIONS: readonly RegisterSection[] = AREAS.flatMap((a): readonly RegisterSection[] => ('register' in a ? a.register : []));

/**
 * `fetch_initial_state_data`: the state `POST /register` returns, one section per
 * event type the client asked for (`fetch` null: all). Gathered synchronously, right
 * after the queue is created, so that every fact is either in this state or
 * delivered to the queue.
 */
export function fetchInitialState(view: StateView, req: InitialStateRequest, fetch: Set<string> | null): Record<string, unknown> {
  const state: Record<string, unknown> = {};
  for (const section of SECTIONS) {
    if (fetch === null || section.types.some((t) => fetch.has(t))) section.fill(state, req, view);
  }
  return state;
}

/** The deliveries a fact causes (its declaration's `notify`), derived against `view`. */
export function notify(view: StateView, s: Stamped): Delivery[] {
  return FACTS.get(s.fact.type)?.notify?.(s.fact, s.seq, view) ?? [];
}
