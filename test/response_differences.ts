/**
 * Where Parley's responses deliberately differ from Zulip's description (feature level
 * 420), by schema of the description: the fields Parley adds to an object the description
 * closes (`additionalProperties: false`), or, with `as`, a field whose description is
 * wrong. The API reference's "Differences from Zulip's description" (docs/api.md) lists the same entries
 * (`response_differences.test.ts` holds them equal); the response validator
 * (`zulip_responses.ts`) admits these and nothing else.
 */

/**
 * One difference: in `schema` (a component of the description), `fields` are admitted (as
 * `as`, when given); or events of type `event`, which the description does not have, are.
 */
export interface ResponseDifference {
  schema?: string;
  event?: string;
  fields: string[];
  /** The schema the fields take instead of the description's; admitted as anything when absent. */
  as?: object;
  why: string;
}

export const RESPONSE_DIFFERENCES: ResponseDifference[] = [
  {
    schema: 'get_server_settings_200_response',
    fields: ['service_version', 'service_feature_level', 'service_merge_base'],
    why: 'the version under the service\'s own names, beside `zulip_*`',
  },
  {
    schema: 'register_queue_200_response',
    fields: ['service_version', 'service_feature_level', 'service_merge_base'],
    why: 'the version under the service\'s own names, beside `zulip_*`',
  },
  {
    schema: 'get_events_200_response_allOf_events_inner_oneOf_65',
    fields: ['service_version', 'service_feature_level', 'service_merge_base'],
    why: 'the version under the service\'s own names, beside `zulip_*` (the `restart` event)',
  },
  {
    schema: 'CodedError',
    fields: ['first_message_id_allowed_to_move', 'total_messages_allowed_to_move', 'total_messages_in_topic', 'objections'],
    why: 'description incomplete: its own examples of `MOVE_MESSAGES_TIME_LIMIT_EXCEEDED` (`PATCH /messages/{message_id}`) and `CANNOT_DEACTIVATE_GROUP_IN_USE` carry these, but their schema is a bare `CodedError`',
  },
  {
    schema: 'get_events_200_response_allOf_events_inner_oneOf_10',
    fields: ['local_message_id'],
    why: 'description incomplete: Zulip\'s `message` event carries the sender\'s `local_id` back to the queue that sent it (`zerver/tornado/event_queue.py`)',
  },
  {
    schema: 'register_queue_200_response',
    fields: ['reminders'],
    as: { type: 'array', items: { $ref: '#/components/schemas/Reminder' } },
    why: 'description wrong: `reminders` holds `Reminder` objects, as `GET /reminders` and `reminders` events do, not `ScheduledMessage`s',
  },
  ...['get_navigation_views_200_response', 'add_navigation_view_200_response'].map((schema) => ({
    schema,
    fields: ['ignored_parameters_unsupported'],
    why: 'description incomplete: since level 167 any success may carry it; these two schemas forgot it',
  })),
  {
    schema: 'get_user_presence_200_response',
    fields: ['presence'],
    as: { anyOf: [{ type: 'object', additionalProperties: { $ref: '#/components/schemas/get_user_presence_200_response_allOf_presence_value' } }, { $ref: '#/components/schemas/ModernPresenceFormat' }] },
    why: 'newer than the description: with `slim_presence=true` (as Zulip\'s current view takes it) the modern format, `active_timestamp` and `idle_timestamp`',
  },
  {
    schema: 'CodedError',
    fields: ['errors'],
    why: 'description incomplete: Zulip\'s `ValidationFailureError` (a linkifier\'s or playground\'s URL template refused) adds `errors`, Django\'s messages by field',
  },
  // Shapes of feature levels above the one Parley reports (docs/api.md, Feature level, says which and why):
  // extra fields, which clients of the reported level ignore.
  ...['User', 'get_own_user_200_response', 'register_queue_200_response_allOf_cross_realm_bots_inner'].map((schema) => ({
    schema,
    fields: ['is_imported_stub'],
    why: 'feature level 433 (always false: Parley imports no stub users)',
  })),
  {
    schema: 'get_own_user_200_response',
    fields: ['bot_type'],
    why: 'a later level (Zulip\'s unreleased changelog): `null` for a human',
  },
  {
    schema: 'get_own_user_200_response',
    fields: ['bot_owner_id'],
    why: 'description incomplete: Zulip\'s `format_user_row` gives a bot its `bot_owner_id`, `GET /users/me` as a bot included',
  },
  ...['BasicChannel', 'Subscription', 'get_streams_200_response_allOf_streams_inner', 'register_queue_200_response_allOf_never_subscribed_inner'].map((schema) => ({
    schema,
    fields: ['can_create_topic_group'],
    why: 'a later level (Zulip\'s unreleased changelog): who may start a topic, which Parley enforces',
  })),
  {
    schema: 'register_queue_200_response',
    fields: ['devices'],
    why: 'a later level (Zulip\'s unreleased changelog): the devices registered with `device_id`',
  },
  {
    event: 'device',
    fields: [],
    why: 'a later level (Zulip\'s unreleased changelog): `add`, `update`, `remove` of a device registered with `device_id`',
  },
];
