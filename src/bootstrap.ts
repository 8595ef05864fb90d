/**
 * Creating an organization with its owner: shared by `parley create-org` and by the
 * first start on an empty data directory, which also gives it its starter channels.
 */
import { randomBytes } from 'node:crypto';
import { hashPassword } from '../actors/rules/passwords.js';
import type { Runtime } from '../actors/runtime/runtime.js';

export interface NewOrg {
  name: string;
  subdomain: string;
  ownerEmail: string;
  ownerPassword: string;
  ownerName: string;
}

/** What `create-org` prints. */
export interface CreatedOrg {
  organization_id: number;
  subdomain: string;
  owner: { user_id: number; email: string; api_key: string };
}

/** Creates an organization and its owner; resolves once the facts are durable. */
export async function createOrganization(runtime: Runtime, spec: NewOrg): Promise<CreatedOrg> {
  const owner_password_hash = await hashPassword(spec.ownerPassword);
  const value = await runtime.execute({ type: 'CREATE_ORG', name: spec.name, subdomain: spec.subdomain, owner_email: spec.ownerEmail, owner_password_hash, owner_name: spec.ownerName });
  return {
    organization_id: value.org.id,
    subdomain: value.org.subdomain,
    owner: { user_id: value.owner.user_id, email: value.owner.email, api_key: value.owner.api_key },
  };
}

/** A channel every new organization starts with, and the message it starts with, if any. */
export interface StarterChannel {
  name: string;
  description: string;
  welcome?: { topic: string; content: string };
}

/**
 * The channels a new organization starts with, as Zulip's realm creation makes
 * `general`, `sandbox` and a channel with its welcome messages
 * (`do_create_realm`, `send_initial_realm_messages`).
 */
export const STARTER_CHANNELS: readonly StarterChannel[] = [
  { name: 'general', description: 'For team-wide conversations' },
  {
    name: 'welcome',
    description: 'Getting started with Parley, and questions about using it.',
    welcome: {
      topic: 'welcome to Parley!',
      content: [
        'Welcome to **Parley**! Parley made the first channels of this organization, and this message, when it created the organization.',
        '',
        'Conversations are organized by channel and topic, as in Zulip: this message is in the topic `welcome to Parley!` of the channel `welcome`. Talk with everyone in `general`, and try things out in `sandbox`.',
        '',
        'Parley speaks the Zulip REST API, so Zulip clients work with it: log in with your email and password, or with your API key.',
      ].join('\n'),
    },
  },
  {
    name: 'sandbox',
    description: 'Experiment with Parley here.',
    welcome: {
      topic: 'experiments',
      content: [
        'This channel is for trying things out: send a message here, start a topic of your own, or reply in this one.',
        '',
        'Messages understand a little Markdown: **bold**, *italic*, `code`, code blocks and @-mentions of users.',
      ].join('\n'),
    },
  },
];

/** What `createStarterChannels` made. */
export interface StarterContent {
  channels: Array<{ name: string; stream_id: number }>;
  message_ids: number[];
}

/**
 * Creates the starter channels of a new organization, subscribes its owner to them
 * and posts their welcome messages (from the owner, unread for the owner, as Welcome
 * Bot's are: Parley has no bot accounts). Only for an organization just created:
 * the fixtures of the tests create bare ones with `createOrganization` alone.
 *
 * The channels are not marked `is_default` and users created later are not
 * subscribed to them: the actors have no command for default channels yet.
 */
export async function createStarterChannels(runtime: Runtime, created: CreatedOrg): Promise<StarterContent> {
  const org = created.organization_id;
  const owner = created.owner.user_id;
  await runtime.execute({ type: 'SUBSCRIBE', org, actor_id: owner, channels: STARTER_CHANNELS.map((c) => ({ name: c.name, description: c.description })), principals: [owner], invite_only: false, history_public_to_subscribers: null, is_web_public: false, authorization_errors_fatal: true });
  const byName = runtime.org(org)!.channelsByName;
  const channels = STARTER_CHANNELS.map((c) => ({ name: c.name, stream_id: byName.get(c.name.toLowerCase())! }));
  const messages = STARTER_CHANNELS.flatMap((c, i) => (c.welcome ? [{ stream_id: channels[i].stream_id, topic: c.welcome.topic, content: c.welcome.content }] : []));
  const { message_ids } = await runtime.execute({ type: 'SEND_INITIAL_REALM_MESSAGES', org, messages });
  return { channels, message_ids };
}

/** A readable random password for the first owner. */
export function randomPassword(): string {
  return randomBytes(12).toString('base64url');
}
