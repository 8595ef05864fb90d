/**
 * Server settings and API key exchange: the two endpoints a client calls before it
 * has credentials.
 */
import { NO_PASSWORD_HASH, verifyPassword } from '../../../actors/rules/passwords.js';
import { findUserByEmail } from '../../../actors/areas/users.js';
import { versionFields } from '../../../actors/render/register_payloads.js';
import { ApiError } from '../../../actors/shared/errors.js';
import { EMOJI_API_DOCUMENT, EMOJI_API_PATH } from '../../../actors/engines/emoji.js';
import { route, S } from '../../http/route.js';

/** The URL clients reach this organization at, from the request's Host. */
export function realmUrl(host: string | undefined): string {
  return `http://${host ?? '127.0.0.1'}`;
}

export const getServerSettings = route({
  method: 'GET',
  path: '/api/v1/server_settings',
  operationId: 'getServerSettings',
  auth: 'none',
  // As Zulip's get_server_settings: a deactivated organization's settings are still served.
  deactivatedOrg: 'serve',
  summary: 'Server and organization settings a client needs before logging in',
  params: {},
  handler({ org, request }) {
    const url = realmUrl(request.headers.host);
    return {
      json: {
        authentication_methods: { password: true, dev: false, email: true, ldap: false, remoteuser: false, github: false, azuread: false, gitlab: false, apple: false, google: false, saml: false, 'openid connect': false },
        external_authentication_methods: [],
        ...versionFields(),
        push_notifications_enabled: false,
        is_incompatible: false,
        email_auth_enabled: true,
        require_email_format_usernames: true,
        realm_url: url,
        realm_uri: url,
        realm_name: org.name,
        realm_icon: `${url}/static/images/logo/zulip-icon-128x128.png`,
        realm_description: org.description ? `<p>${org.description}</p>` : '',
        realm_web_public_access_enabled: false,
      },
    };
  },
});

export const fetchApiKey = route({
  method: 'POST',
  path: '/api/v1/fetch_api_key',
  // A login stores nothing: users under memory pressure can still sign in and read.
  grows: false,
  operationId: 'fetchApiKey',
  auth: 'none',
  rateClass: 'authenticate_by_username',
  summary: 'Exchange an email and password for an API key',
  params: { username: { schema: S.str, required: true }, password: { schema: S.str, required: true } },
  async handler({ params, org, runtime }) {
    const user = findUserByEmail(runtime, org.id, params.username);
    // Verify even for unknown users, so timing does not reveal which emails exist.
    const ok = await verifyPassword(params.password, user?.password_hash || NO_PASSWORD_HASH);
    if (!user || !ok) throw new ApiError('AUTHENTICATION_FAILED', 'Your username or password is incorrect');
    if (!user.is_active) throw new ApiError('USER_DEACTIVATED', 'Your account has been disabled');
    return { json: { api_key: user.api_key, email: user.email, user_id: user.user_id } };
  },
});

/**
 * Zulip's development-only login (`zerver/views/development/dev_login.py`): an API key
 * for any email, no password. Parley has no development mode, and `server_settings`
 * says `dev: false`, so it answers as Zulip's view does under production settings
 * (`check_dev_auth_backend`): never a key.
 */
export const devFetchApiKey = route({
  method: 'POST',
  path: '/api/v1/dev_fetch_api_key',
  grows: false,
  operationId: 'devFetchApiKey',
  auth: 'none',
  summary: 'Fetch an API key without a password (development servers only: refused here, as on a Zulip production server)',
  params: { username: { schema: S.str, required: true } },
  handler() {
    throw new ApiError('BAD_REQUEST', 'Endpoint not available in production.');
  },
});

export const getEmojiData = route({
  method: 'GET',
  path: EMOJI_API_PATH,
  operationId: 'getEmojiData',
  auth: 'none',
  grows: false,
  deactivatedOrg: 'serve',
  summary: "The Unicode emoji this server accepts, `{code_to_names}` (register's `server_emoji_data_url`; the name holds the content's hash)",
  params: {},
  responses: {
    200: {
      description: 'Each emoji code with its names, the canonical one first (Zulip\'s `emoji_api.json`)',
      schema: { type: 'object', required: ['code_to_names'], properties: { code_to_names: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' }, minItems: 1 } } }, additionalProperties: false },
    },
  },
  handler() {
    return { raw: EMOJI_API_DOCUMENT, headers: [['Cache-Control', 'public, max-age=31536000, immutable']] };
  },
});
