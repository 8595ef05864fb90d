/**
 * Bot storage (Zulip's `zerver/lib/bot_storage.py`): string keys to string values,
 * kept for a bot by its user actor. Only bots have it. The whole of a bot's storage,
 * every key and value counted in characters (code points), may not exceed the
 * server's limit; a write that would is refused whole. No events: only the bot
 * reads it.
 */
import { area, command, userFact } from '../core/area.js';
import type { DecideEnv, Decision } from '../core/domain_logic.js';
import type { StateView } from '../core/state_view.js';
import { badRequest, botsOnly } from '../shared/errors.js';
import type { UserContext } from '../kinds/user.js';
import { entryChars } from '../rules/personal.js';

/** Zulip's `USER_STATE_SIZE_LIMIT`, in characters. */
export const BOT_STORAGE_LIMIT = 10_000_000;

/**
 * The most entries one `PUT /bot_storage` may set (Parley's own cap; Zulip caps only the
 * size, `BOT_STORAGE_LIMIT`). Each is checked against the limit and applied on the one
 * event loop: 87,000 tiny entries (1.4 MB) held it for about 300 ms. The route's schema
 * refuses more, before any is looked at.
 */
export const MAX_BOT_STORAGE_ENTRIES_PER_REQUEST = 1000;

/** Entries were set, overwriting any of the same key. */
export interface BotStorageSet { type: 'BotStorageSet'; org: number; user_id: number; entries: Array<[string, string]> }
export interface BotStorageRemoved { type: 'BotStorageRemoved'; org: number; user_id: number; keys: string[] }

export interface SetBotStorage { type: 'SET_BOT_STORAGE'; user_id: number; org: number; storage: Record<string, string> }
/** Remove `keys`, or everything when none are given. */
export interface RemoveBotStorage { type: 'REMOVE_BOT_STORAGE'; user_id: number; org: number; keys?: string[] }

/** Refuses anyone but an active bot. */
export function checkBot(view: StateView, org: number, userId: number): void {
  if (view.org(org)?.users.get(userId)?.is_bot !== true) throw botsOnly();
}

export const setBotStorage = command({
  type: 'SET_BOT_STORAGE',
  actor: 'user',
  decide(ctx: UserContext, c: SetBotStorage, _env: DecideEnv, view: StateView): Decision<Record<string, never>, BotStorageSet> {
    checkBot(view, c.org, ctx.user_id);
    const limit = BOT_STORAGE_LIMIT;
    const entries = Object.entries(c.storage);
    const { storage, storageChars } = ctx.personal;
    let size = storageChars;
    for (const [k, v] of entries) {
      const old = storage.get(k);
      size += entryChars(k, v) - (old === undefined ? 0 : entryChars(k, old));
    }
    if (size > limit) throw badRequest(`Request exceeds storage limit by ${size - limit} characters. The limit is ${limit} characters.`);
    return { facts: entries.length === 0 ? [] : [{ type: 'BotStorageSet', org: c.org, user_id: ctx.user_id, entries }], value: {} };
  },
});

export const removeBotStorage = command({
  type: 'REMOVE_BOT_STORAGE',
  actor: 'user',
  decide(ctx: UserContext, c: RemoveBotStorage, _env: DecideEnv, view: StateView): Decision<Record<string, never>, BotStorageRemoved> {
    checkBot(view, c.org, ctx.user_id);
    const keys = c.keys === undefined || c.keys.length === 0 ? [...ctx.personal.storage.keys()] : c.keys;
    // As Zulip's `remove_bot_storage`: every key named must exist (a key named twice counts twice).
    if (keys.some((k) => !ctx.personal.storage.has(k)) || new Set(keys).size < keys.length) throw badRequest('Key does not exist.');
    return { facts: keys.length === 0 ? [] : [{ type: 'BotStorageRemoved', org: c.org, user_id: ctx.user_id, keys }], value: {} };
  },
});

/** The characters (code points) a bot's storage takes against BOT_STORAGE_LIMIT, keys and values: 0 for no such user. */
export function botStorageUsed(view: StateView, org: number, userId: number): number {
  return view.user(org, userId)?.personal.storageChars ?? 0;
}

/** The entries named by `keys` (every entry when none are given), or Zulip's error for a missing key. */
export function getBotStorage(view: StateView, org: number, userId: number, keys: string[] | undefined): Record<string, string> {
  checkBot(view, org, userId);
  const storage = view.user(org, userId)?.personal.storage ?? new Map<string, string>();
  const out: Record<string, string> = {};
  for (const k of keys === undefined || keys.length === 0 ? storage.keys() : keys) {
    const v = storage.get(k);
    if (v === undefined) throw badRequest('Key does not exist.');
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

const botStorageSet = userFact<BotStorageSet>({
  type: 'BotStorageSet',
  apply(ctx, f) {
    const p = ctx.personal;
    for (const [k, v] of f.entries) {
      const old = p.storage.get(k);
      if (old !== undefined) p.storageChars -= entryChars(k, old);
      p.storage.set(k, v);
      p.storageChars += entryChars(k, v);
    }
  },
});

const botStorageRemoved = userFact<BotStorageRemoved>({
  type: 'BotStorageRemoved',
  apply(ctx, f) {
    const p = ctx.personal;
    for (const k of f.keys) {
      const old = p.storage.get(k);
      if (old === undefined) continue;
      p.storageChars -= entryChars(k, old);
      p.storage.delete(k);
    }
  },
});

export const botStorage = area({
  name: 'bot storage',
  commands: [setBotStorage, removeBotStorage],
  facts: [botStorageSet, botStorageRemoved],
});
