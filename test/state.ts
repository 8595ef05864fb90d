/**
 * A canonical digest of a runtime's whole state, for tests that compare states
 * (replay, snapshots, restore, crash recovery). Sets and maps are sorted.
 */
import { IdSet } from '../actors/shared/id_set.js';
import { IdMap } from '../actors/shared/id_map.js';
import { MessageTable } from '../actors/shared/message_table.js';
import type { Runtime } from '../actors/runtime/runtime.js';
import type { Bodies } from '../actors/core/bodies.js';
import { createHash } from 'node:crypto';

/** Strings at least this long stand in the digest as their length and SHA-256. */
const LONG_TEXT = 64 * 1024;
const longTexts = new Map<string, string>();

/**
 * A long string as its length and SHA-256: a state that keeps a value of a megabyte (a
 * fuzz case's oversized name, accepted) made every later digest of it escape and copy the
 * megabyte again, several milliseconds each. Each string is hashed once, and found again in
 * the map without being read (V8 hashes a string this long by its length, and compares
 * the same string by identity).
 */
function longText(value: string): string {
  let digest = longTexts.get(value);
  if (digest === undefined) {
    digest = `\u0000long text of ${value.length} UTF-16 units, sha256 ${createHash('sha256').update(value, 'utf16le').digest('hex')}`;
    longTexts.set(value, digest);
  }
  return digest;
}

/**
 * Entries sorted by their text (each element's, or each key's, JSON), in the order
 * `localeCompare` gives: each text is made once, not once per comparison (a large set
 * made the digest most of a fuzz file's time).
 */
function byText<T>(entries: Array<readonly [string, T]>): Array<readonly [string, T]> {
  return entries.sort((a, b) => a[0].localeCompare(b[0]));
}

/**
 * A value in canonical form. A stored message's body locator says where its body is in
 * this runtime's store, which differs between runtimes with the same state: the body
 * itself stands in for it, and the store is left out.
 */
function canonIn(bodies: Bodies): (value: unknown) => unknown {
  const canon = (value: unknown): unknown => {
    if (typeof value === 'string') return value.length >= LONG_TEXT ? longText(value) : value;
    if (value instanceof IdSet) return value.toArray();
    // Column stores, as the maps they stand for.
    if (value instanceof MessageTable || value instanceof IdMap) return canon(new Map<number, unknown>(value.entries()));
    if (value instanceof Set) return byText([...value].map((v) => { const c = canon(v); return [JSON.stringify(c), c] as const; })).map(([, c]) => c);
    if (value instanceof Map) return byText([...value.entries()].map(([k, v]) => { const ck = canon(k); return [JSON.stringify(ck), [ck, canon(v)]] as const; })).map(([, e]) => e);
    if (Array.isArray(value)) return value.map(canon);
    if (value === bodies) return undefined;
    if (value && typeof value === 'object') {
      const record = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(value).sort()) {
        if (k === 'seq' || k === 'last_active' || record[k] === bodies) continue;
        out[k] = k === 'body' && typeof record.body === 'number' && 'sender_id' in record ? canon(bodies.read(record.body)) : canon(record[k]);
      }
      return out;
    }
    return value;
  };
  return canon;
}

/** Everything the actors hold, without per-actor seq bookkeeping. */
export function stateDigest(rt: Runtime, opts: { queues?: boolean } = {}): string {
  const src = rt.contexts();
  const canon = canonIn(rt.bodies);
  const orgs = src.orgs.map(({ org, channels, users }) => ({
    org: canon(org),
    channels: channels.map(canon).sort((a: any, b: any) => a.channel.stream_id - b.channel.stream_id),
    users: users.map(canon).sort((a: any, b: any) => a.user_id - b.user_id),
  }));
  const queues = opts.queues ? rt.queues.exportQueues().map(canon).sort((a: any, b: any) => String(a.id).localeCompare(String(b.id))) : [];
  return JSON.stringify({ server: canon(src.server), orgs, queues });
}

/** One organization's state (its actors, as `stateDigest` writes them), without the server's or other organizations'. */
export function orgDigest(rt: Runtime, orgId: number): string {
  const canon = canonIn(rt.bodies);
  const shard = rt.contexts().orgs.find(({ org }) => org.org.id === orgId);
  if (!shard) return 'absent';
  return JSON.stringify({
    org: canon(shard.org),
    channels: shard.channels.map(canon).sort((a: any, b: any) => a.channel.stream_id - b.channel.stream_id),
    users: shard.users.map(canon).sort((a: any, b: any) => a.user_id - b.user_id),
  });
}
