/**
 * Video call providers (Zulip's `Realm.VIDEO_CHAT_PROVIDERS`): which the server
 * offers follows its settings, as Zulip's `get_available_video_chat_providers` does.
 * Zoom is never offered: it needs an OAuth application and flow Parley does not have.
 */
import type { Config } from '../config.js';

/** One provider, as `realm_available_video_chat_providers` lists it. */
export interface VideoChatProvider {
  name: string;
  id: number;
}

/** Zulip's providers and their ids (id 2 was Google Hangouts, since removed). */
export const VIDEO_CHAT_PROVIDERS = {
  disabled: { name: 'None', id: 0 },
  jitsi_meet: { name: 'Jitsi Meet', id: 1 },
  zoom: { name: 'Zoom', id: 3 },
  big_blue_button: { name: 'BigBlueButton', id: 4 },
} as const satisfies Record<string, VideoChatProvider>;

type CallSettings = Pick<Config, 'jitsiServerUrl' | 'bbbUrl' | 'bbbSecret'>;

/** Whether BigBlueButton is configured: both its URL and its shared secret. */
export function bigBlueButtonConfigured(config: CallSettings): boolean {
  return config.bbbUrl !== '' && config.bbbSecret !== '';
}

/** The providers this server offers, by key; `disabled` always. */
export function availableVideoChatProviders(config: CallSettings): Record<string, VideoChatProvider> {
  const out: Record<string, VideoChatProvider> = { disabled: { ...VIDEO_CHAT_PROVIDERS.disabled } };
  if (config.jitsiServerUrl !== '') out.jitsi_meet = { ...VIDEO_CHAT_PROVIDERS.jitsi_meet };
  if (bigBlueButtonConfigured(config)) out.big_blue_button = { ...VIDEO_CHAT_PROVIDERS.big_blue_button };
  return out;
}

/** The call fields of `/register` (with the `realm` section) that come from server settings. */
export function callRegisterFields(config: CallSettings): Record<string, unknown> {
  return {
    realm_available_video_chat_providers: availableVideoChatProviders(config),
    server_jitsi_server_url: config.jitsiServerUrl === '' ? null : config.jitsiServerUrl,
    // The deprecated form, `realm_jitsi_server_url || server_jitsi_server_url` (the realm's
    // is always null here), for clients below feature level 212. Zulip's description types
    // it a string, never null: without a Jitsi server it is empty, which no client calls.
    jitsi_server_url: config.jitsiServerUrl,
  };
}
