/**
 * What a client declared it handles, where Parley's events differ by it: Zulip's
 * `client_capabilities` of `POST /register`, and the two older top-level flags
 * `client_gravatar` and `slim_presence`. This table is the one place that names them:
 * the register request reads them through it, queues keep them (in the
 * `QueueRegistered` fact and the queue's context, one boolean each), and event routing
 * builds one event per combination a fact's notifier can tell apart.
 */

interface Capability {
  /** Where `/register` takes it: inside `client_capabilities`, or as a parameter of its own. */
  readonly from: 'client_capabilities' | 'parameter';
  /** Its value when a register request leaves it out (Zulip's default). */
  readonly registerDefault: boolean;
  readonly doc: string;
}

export const CAPABILITIES = {
  empty_topic_name: { from: 'client_capabilities', registerDefault: false, doc: 'The empty topic is shown as `""`, not by its display name.' },
  bulk_message_deletion: { from: 'client_capabilities', registerDefault: false, doc: '`delete_message` events list `message_ids`.' },
  // Zulip's default since feature level 92: the client computes Gravatar URLs.
  client_gravatar: { from: 'parameter', registerDefault: true, doc: 'Gravatar URLs are left to the client: users\' `avatar_url` is null.' },
  include_deactivated_groups: { from: 'client_capabilities', registerDefault: false, doc: 'Deactivated user groups are kept: their deactivation is an `update`, not a `remove`.' },
  archived_channels: { from: 'client_capabilities', registerDefault: false, doc: 'Archived channels are kept: archiving is an `update` of `is_archived`, not a `delete`.' },
  slim_presence: { from: 'parameter', registerDefault: false, doc: '`presence` events without `email`.' },
  simplified_presence_events: { from: 'client_capabilities', registerDefault: false, doc: '`presence` events in the modern format.' },
} as const satisfies Record<string, Capability>;

export type CapabilityName = keyof typeof CAPABILITIES;
const NAMES = Object.keys(CAPABILITIES) as CapabilityName[];

/** Each capability, on or off, as a queue keeps them. */
export type ClientCapabilities = { readonly [K in CapabilityName]: boolean };

/** Capabilities as stored in a fact or a snapshot: one written before a capability existed lacks it (off). */
export type StoredCapabilities = { readonly [K in CapabilityName]?: boolean };

/** The capabilities of a `/register` request (its `client_capabilities` and flags), with Zulip's defaults. */
export function requestedCapabilities(params: { client_capabilities?: Record<string, unknown>; client_gravatar?: boolean; slim_presence?: boolean }): ClientCapabilities {
  const out = {} as Record<CapabilityName, boolean>;
  for (const name of NAMES) {
    const c: Capability = CAPABILITIES[name];
    const given = c.from === 'client_capabilities' ? params.client_capabilities?.[name] : params[name as 'client_gravatar' | 'slim_presence'];
    out[name] = typeof given === 'boolean' ? given : c.registerDefault;
  }
  return out;
}

/** Stored capabilities read back: each present one as it was, each absent one off. */
export function storedCapabilities(stored: StoredCapabilities): ClientCapabilities {
  const out = {} as Record<CapabilityName, boolean>;
  for (const name of NAMES) out[name] = stored[name] === true;
  return out;
}

/** A number for each combination of capabilities, for caching one event per combination. */
export function capabilityVariant(caps: ClientCapabilities): number {
  let variant = 0;
  for (let i = 0; i < NAMES.length; i++) if (caps[NAMES[i]]) variant |= 1 << i;
  return variant;
}
