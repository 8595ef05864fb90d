/**
 * `PATCH /realm`: the organization's name, description and the settings Parley's
 * features read (administrators; a few settings owners only). Parameters it does not
 * know are listed back in `ignored_parameters_unsupported` by the HTTP layer.
 */
import { Type } from '../../../actors/shared/cjs_packages.js';
import type { TSchema } from '@sinclair/typebox';
import { isGroupSetting, REALM_DEFAULTS, REALM_SETTING_NAMES } from '../../../actors/rules/realm_settings.js';
import { availableVideoChatProviders } from '../../calls/providers.js';
import { R, route, S } from '../../http/route.js';

/** A parameter per setting: group settings as `{new, old}` objects, time limits and retention as numbers or "unlimited". */
function realmParams(): Record<string, { schema: TSchema }> {
  const out: Record<string, { schema: TSchema }> = {};
  for (const name of REALM_SETTING_NAMES) {
    const d = REALM_DEFAULTS[name];
    const schema = isGroupSetting(name) ? S.obj
      : name.endsWith('_limit_seconds') || name === 'message_retention_days' ? Type.Union([Type.Integer(), Type.Literal('unlimited')])
      : typeof d === 'boolean' ? S.bool : typeof d === 'number' ? S.int : S.str;
    out[name] = { schema };
  }
  return out;
}

export const updateRealm = route({
  method: 'PATCH',
  path: '/api/v1/realm',
  operationId: 'updateRealm',
  auth: 'user',
  summary: "Change the organization's name, description or settings (organization administrators only)",
  response: R.empty,
  params: { name: { schema: S.str }, description: { schema: S.str }, ...realmParams() },
  async handler({ params, org, user, runtime, config }) {
    const { name, description, ...rest } = params as Record<string, unknown> & { name?: string; description?: string };
    const settings: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(rest)) if (value !== undefined) settings[key] = value;
    await runtime.execute({ type: 'UPDATE_REALM', org: org.id, actor_id: user.user_id, name, description, settings, video_chat_providers: Object.values(availableVideoChatProviders(config)).map((p) => p.id) });
    return { json: {} };
  },
});

export const testWelcomeBotCustomMessage = route({
  method: 'POST',
  path: '/api/v1/realm/test_welcome_bot_custom_message',
  operationId: 'testWelcomeBotCustomMessage',
  auth: 'user',
  summary: "Send yourself the Welcome Bot's custom message, as new users would get it (organization administrators only)",
  params: { welcome_message_custom_text: { schema: S.str, required: true } },
  async handler({ params, org, user, runtime }) {
    const { message_id } = await runtime.execute({ type: 'TEST_WELCOME_BOT_MESSAGE', org: org.id, actor_id: user.user_id, text: params.welcome_message_custom_text });
    return { json: { message_id } };
  },
});
