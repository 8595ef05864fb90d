/**
 * A user's personal data, kept by their user actor: drafts, saved snippets,
 * navigation views, muted users and (for bots) bot storage. The areas that change
 * them are `actors/areas/{drafts,saved_snippets,navigation_views,muted_users,bot_storage}.ts`;
 * this module holds the shapes, as the API shows them, and their snapshot form.
 */
import { codePointLength } from './messages.js';
import { userState } from '../core/state_slices.js';

declare module '../kinds/user.js' {
  interface UserContext {
    /** Drafts, saved snippets, navigation views, muted users and bot storage. */
    personal: PersonalData;
  }
}

userState({ personal: { empty: emptyPersonal, save: personalChunk, load: restorePersonal } });

/** A draft as Zulip's `Draft.to_dict` shows it. */
export interface Draft {
  id: number;
  /** `stream`, `private`, or `""` for a draft with no recipient. */
  type: '' | 'stream' | 'private';
  /** The channel id, or the recipients' user ids (the user themself only for a draft to self). */
  to: number[];
  topic: string;
  content: string;
  /** Unix seconds of the last edit. */
  timestamp: number;
}

/** A saved snippet as Zulip's `SavedSnippet.to_api_dict` shows it. */
export interface SavedSnippet {
  id: number;
  title: string;
  content: string;
  /** Unix seconds. */
  date_created: number;
}

/** A navigation view: a built-in view's settings, or a custom view (with a name). */
export interface NavigationView {
  fragment: string;
  is_pinned: boolean;
  name: string | null;
}

/** Everything personal a user actor keeps besides flags and subscriptions. */
export interface PersonalData {
  drafts: Map<number, Draft>;
  /** The id the next draft gets. */
  nextDraftId: number;
  snippets: Map<number, SavedSnippet>;
  nextSnippetId: number;
  /** By fragment, in the order they were added. */
  views: Map<string, NavigationView>;
  /** Muted user ids, each with when it was muted (Unix seconds), in the order they were muted. */
  muted: Map<number, number>;
  /** A bot's storage: string keys to string values. */
  storage: Map<string, string>;
  /** Code points of every key and value in `storage`, as Zulip counts against its limit. */
  storageChars: number;
}

export function emptyPersonal(): PersonalData {
  return { drafts: new Map(), nextDraftId: 1, snippets: new Map(), nextSnippetId: 1, views: new Map(), muted: new Map(), storage: new Map(), storageChars: 0 };
}

/** Bot storage's size: code points of the key and of the value. */
export function entryChars(key: string, value: string): number {
  return codePointLength(key) + codePointLength(value);
}

/** The snapshot form of `PersonalData`; absent parts are empty. */
export interface PersonalChunk {
  drafts?: Draft[];
  nextDraftId?: number;
  snippets?: SavedSnippet[];
  nextSnippetId?: number;
  views?: NavigationView[];
  muted?: Array<[number, number]>;
  storage?: Array<[string, string]>;
}

export function personalChunk(p: PersonalData): PersonalChunk {
  return {
    drafts: [...p.drafts.values()], nextDraftId: p.nextDraftId, snippets: [...p.snippets.values()], nextSnippetId: p.nextSnippetId,
    views: [...p.views.values()], muted: [...p.muted], storage: [...p.storage],
  };
}

export function restorePersonal(c: PersonalChunk | undefined): PersonalData {
  const p = emptyPersonal();
  if (!c) return p;
  p.drafts = new Map((c.drafts ?? []).map((d) => [d.id, d]));
  p.nextDraftId = c.nextDraftId ?? 1;
  p.snippets = new Map((c.snippets ?? []).map((s) => [s.id, s]));
  p.nextSnippetId = c.nextSnippetId ?? 1;
  p.views = new Map((c.views ?? []).map((v) => [v.fragment, v]));
  p.muted = new Map(c.muted ?? []);
  p.storage = new Map(c.storage ?? []);
  for (const [k, v] of p.storage) p.storageChars += entryChars(k, v);
  return p;
}
