/**
 * Video calls (Zulip's `zerver/views/video_calls.py`): a meeting link for the
 * providers the server is configured for. Jitsi links name a fresh random room;
 * BigBlueButton links go through `/calls/bigbluebutton/join`, which creates the
 * meeting on the BigBlueButton server and redirects there. Zoom and Webex need an
 * OAuth application Parley cannot have, and say so as Zulip does when unconfigured.
 */
import { Type } from '../../../actors/shared/cjs_packages.js';
import { randomInt } from 'node:crypto';
import { ApiError, badRequest } from '../../../actors/shared/errors.js';
import { createMeeting, joinCallUrl, signMeeting, unsignMeeting } from '../../calls/bigbluebutton.js';
import { bigBlueButtonConfigured } from '../../calls/providers.js';
import type { Config } from '../../config.js';
import { R, route, S } from '../../http/route.js';

const OAUTH_PROVIDERS: Record<string, string> = { zoom: 'Zoom', webex: 'Webex' };

/** A Jitsi room link, as Zulip's web client makes one: a 15-digit random room id. */
function jitsiUrl(config: Config, videoCall: boolean): string {
  if (config.jitsiServerUrl === '') throw badRequest('Jitsi Meet is not configured.');
  // randomInt spans less than 2^48, so the 15 digits are drawn as a first digit and 14 more.
  const room = `${randomInt(1, 10)}${String(randomInt(0, 100_000_000_000_000)).padStart(14, '0')}`;
  return `${config.jitsiServerUrl}/${room}${videoCall ? '' : '#config.startWithVideoMuted=true'}`;
}

export const createCall = route({
  method: 'POST',
  path: '/api/v1/calls/{provider}/create',
  operationId: 'createVideoCall',
  auth: 'user',
  summary: 'A meeting link: `jitsi` (Parley\'s, a fresh room on --jitsi-server-url); `zoom` and `webex` need OAuth, which Parley does not do, and are refused',
  response: R.fields({ url: Type.String() }),
  params: {
    provider: { schema: S.str, in: 'path', required: true },
    is_video_call: { schema: S.bool, description: 'false: cameras start off' },
  },
  handler({ params, config }) {
    const oauth = OAUTH_PROVIDERS[params.provider];
    if (oauth !== undefined) throw badRequest(`${oauth} credentials have not been configured`);
    if (params.provider !== 'jitsi') throw new ApiError('NOT_FOUND', `Unknown video call provider: ${params.provider}`);
    return { json: { url: jitsiUrl(config, params.is_video_call ?? true) } };
  },
});

export const createBigBlueButtonCall = route({
  method: 'GET',
  path: '/api/v1/calls/bigbluebutton/create',
  operationId: 'createBigBlueButtonVideoCall',
  auth: 'user',
  summary: 'A BigBlueButton meeting link, signed; the caller will be its moderator (needs --bbb-url and --bbb-secret)',
  params: {
    meeting_name: { schema: S.str, required: true },
    voice_only: { schema: S.bool, description: 'true: cameras are disabled for everyone but the moderator may change it' },
  },
  handler({ params, org, user, config }) {
    if (!bigBlueButtonConfigured(config)) throw badRequest('BigBlueButton is not configured.');
    const signed = signMeeting({
      meeting_id: `parley-${randomInt(100_000_000_000, 1_000_000_000_000)}`,
      name: params.meeting_name,
      lock_settings_disable_cam: params.voice_only ?? false,
      moderator: user.user_id,
      org: org.id,
    }, config.bbbSecret);
    return { json: { url: `/calls/bigbluebutton/join?bigbluebutton=${encodeURIComponent(signed)}` } };
  },
});

export const joinBigBlueButtonCall = route({
  method: 'GET',
  path: '/calls/bigbluebutton/join',
  operationId: 'joinBigBlueButtonVideoCall',
  auth: 'user',
  summary: 'Creates the signed meeting on the BigBlueButton server and redirects (302) to its join URL',
  params: { bigbluebutton: { schema: S.str, required: true } },
  responses: { 302: { description: 'Redirect to the BigBlueButton join URL', body: false } },
  async handler({ params, org, user, config }) {
    if (!bigBlueButtonConfigured(config)) throw badRequest('BigBlueButton is not configured.');
    const meeting = unsignMeeting(params.bigbluebutton, config.bbbSecret);
    // A link is for the organization it was made in.
    if (meeting.org !== org.id) throw badRequest('Invalid signature.');
    const createTime = await createMeeting(config.bbbUrl, config.bbbSecret, meeting);
    return { status: 302, empty: true, headers: [['Location', joinCallUrl(config.bbbUrl, config.bbbSecret, meeting, user, createTime)], ['Cache-Control', 'no-store']] };
  },
});
