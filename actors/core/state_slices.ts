/**
 * State slices: the parts of an actor kind's context that one area owns. An area
 * declares its slices next to its code (`orgState({ linkifiers: { empty: () => [] } })`)
 * and adds the fields to the kind's context type by declaration merging
 * (`declare module '../kinds/organization.js' { interface OrgContext { … } }`); the
 * kind makes new contexts, writes its head chunk and restores it from the slices
 * declared, so adding state touches only its area.
 *
 * A slice's key is both the context's field and the head chunk's (unless `chunkKey`
 * names another), so a head chunk holds each slice as before slices existed. A head
 * chunk written before a slice existed lacks it: the slice is then its `empty()`.
 * Slices register as their modules load; `actors/areas/index.ts`, which loads every
 * area, then seals the list, and a kind that reads the list before that throws.
 */
import type { Contexts } from './state_view.js';

/** The kinds whose contexts hold slices. */
export type SliceKind = 'org' | 'user' | 'server';

/** A slice kept in the head chunk. */
export interface StoredField<T> {
  /** The value of a new actor, and of one restored from a head chunk written before the slice existed. */
  empty(): T;
  /** What the head chunk holds (the value itself when absent). */
  save?(value: T): unknown;
  /** The value back from what `save` gave (taken as it is when absent). */
  load?(saved: any): T;
  /** The head chunk's name for it, when not the field's (snapshots written before slices named it so). */
  chunkKey?: string;
}

/** A slice computed from the rest of the context (an index), never persisted: made after the stored ones. */
export interface DerivedField<T, Ctx> {
  derive(ctx: Ctx): T;
}

export type FieldSlice<T, Ctx> = StoredField<T> | DerivedField<T, Ctx>;

/** The fields of a kind's context that `fields` may declare, each with its slice. */
export type SliceFields<K extends SliceKind> = { [F in keyof Contexts[K]]?: FieldSlice<Contexts[K][F], Contexts[K]> };

interface Slice {
  key: string;
  field: FieldSlice<unknown, unknown>;
}

const SLICES: Record<SliceKind, Slice[]> = { org: [], user: [], server: [] };
let sealed = false;

/** Declares slices of `kind`'s context. */
export function stateSlices<K extends SliceKind>(kind: K, fields: SliceFields<K>): void {
  if (sealed) throw new Error(`State slices of ${kind} declared after the kinds read them: is the module listed in actors/areas/index.ts?`);
  for (const [key, field] of Object.entries(fields) as Array<[string, FieldSlice<unknown, unknown>]>) {
    if (SLICES[kind].some((s) => s.key === key)) throw new Error(`State slice ${kind}.${key} is declared twice`);
    SLICES[kind].push({ key, field });
  }
}

export const orgState = (fields: SliceFields<'org'>): void => stateSlices('org', fields);
export const userState = (fields: SliceFields<'user'>): void => stateSlices('user', fields);
export const serverState = (fields: SliceFields<'server'>): void => stateSlices('server', fields);

/**
 * Ends the declarations: every area has loaded (`actors/areas/index.ts`). The slices
 * are sorted by name, so that a head chunk lists them in one order, whatever order the
 * modules loaded in (restoring reads them by name).
 */
export function sealStateSlices(): void {
  sealed = true;
  for (const list of Object.values(SLICES)) list.sort((a, b) => (a.key < b.key ? -1 : 1));
}

function slicesOf(kind: SliceKind): readonly Slice[] {
  if (!sealed) throw new Error(`The state slices of ${kind} are read before every area declared its own: import actors/areas/index.js first`);
  return SLICES[kind];
}

const stored = (s: Slice): s is Slice & { field: StoredField<unknown> } => 'empty' in s.field;

/**
 * Completes a context of `kind` from its kind's own fields (`core`): each slice from the
 * head chunk `head` (a restore), or empty (a new actor, or a chunk without it); then the
 * derived ones.
 */
export function withSlices<K extends SliceKind>(kind: K, core: Partial<Contexts[K]>, head?: Record<string, unknown>): Contexts[K] {
  const ctx = core as Record<string, unknown>;
  for (const s of slicesOf(kind)) {
    if (!stored(s)) continue;
    const saved = head?.[s.field.chunkKey ?? s.key];
    ctx[s.key] = saved == null ? s.field.empty() : s.field.load ? s.field.load(saved) : saved;
  }
  for (const s of slicesOf(kind)) if (!stored(s)) ctx[s.key] = (s.field as DerivedField<unknown, unknown>).derive(ctx);
  return ctx as unknown as Contexts[K];
}

/** The slices of a context, as its head chunk holds them. */
export function savedSlices<K extends SliceKind>(kind: K, ctx: Contexts[K]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const values = ctx as unknown as Record<string, unknown>;
  for (const s of slicesOf(kind)) if (stored(s)) out[s.field.chunkKey ?? s.key] = s.field.save ? s.field.save(values[s.key]) : values[s.key];
  return out;
}

/** A map of records by their `id`, held in the head chunk as a list. */
export function recordsById<T extends { id: number }>(): StoredField<Map<number, T>> {
  return { empty: () => new Map(), save: (m) => [...m.values()], load: (list: T[]) => new Map(list.map((r) => [r.id, r])) };
}

/** A map held in the head chunk as its entries. */
export function mapEntries<K, V>(): StoredField<Map<K, V>> {
  return { empty: () => new Map(), save: (m) => [...m], load: (entries: Array<[K, V]>) => new Map(entries) };
}
