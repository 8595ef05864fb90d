/**
 * The one fixture builder for tests that want a small organization (issue 26 §2): a chat
 * fixture, its users and its channels with their subscribers, declared and then made
 * through the API only, as a client would make them.
 *
 *   const { f, alice, bob, channels } = await world({
 *     users: { alice: 'Alice', bob: 'Bob', guest: 'guest' },
 *     roles: { guest: Role.GUEST },
 *     channels: { general: ['owner', 'alice', 'bob'] },
 *   });
 *
 * Users are made in the order given, each `<key>@example.com` with the full name given (by
 * the owner through POST /users), then given their role, if any, through PATCH /users/{id}.
 * Channels are then made in the order given, each by the owner subscribing the named users
 * (`owner` is the fixture's owner), and their ids are read back through GET /get_stream_id.
 * What one file alone needs it adds after this call.
 */
import type { RoleNumber } from '../actors/shared/types.js';
import { chatFixture, type ChatFixture, type Credentials, type FixtureOptions } from './helpers.js';

export interface WorldSpec<U extends string, C extends string> extends FixtureOptions {
  /** Users to create, in this order: key (the email's local part) → full name. */
  users?: Record<U, string>;
  /** Roles other than member, by user key. */
  roles?: Partial<Record<U, RoleNumber>>;
  /** Channels the owner creates, in this order: name → who it subscribes (user keys, or `owner`). */
  channels?: Record<C, ReadonlyArray<NoInfer<U> | 'owner'>>;
}

/** The fixture, each user's credentials under its key, and each channel's id under its name. */
export type World<U extends string, C extends string> = { f: ChatFixture; owner: Credentials; channels: Record<C, number> } & Record<U, Credentials>;

export async function world<U extends string = never, C extends string = never>(spec: WorldSpec<U, C> = {}): Promise<World<U, C>> {
  const { users = {} as Record<U, string>, roles = {}, channels = {} as Record<C, ReadonlyArray<U | 'owner'>>, ...options } = spec;
  const f = await chatFixture(options);
  const who: Record<string, Credentials> = { owner: f.owner };
  for (const [key, fullName] of Object.entries<string>(users)) {
    if (key in who || key === 'f' || key === 'channels') throw new Error(`world: the user key ${key} is taken`);
    const user = await f.createUser(`${key}@example.com`, fullName);
    const role = (roles as Record<string, RoleNumber | undefined>)[key];
    if (role !== undefined) {
      const changed = await f.call(f.owner, 'PATCH', `/api/v1/users/${user.user_id}`, { role });
      if (changed.status !== 200) throw new Error(`world: ${key}'s role: ${changed.body}`);
    }
    who[key] = user;
  }
  const ids: Record<string, number> = {};
  for (const [name, members] of Object.entries<ReadonlyArray<string>>(channels)) {
    const principals = members.map((key) => {
      if (!(key in who)) throw new Error(`world: channel ${name} names no user ${key}`);
      return who[key].user_id;
    });
    const sub = await f.subscribe(f.owner, name, principals);
    if (sub.status !== 200) throw new Error(`world: channel ${name}: ${sub.body}`);
    const found = await f.call(f.owner, 'GET', '/api/v1/get_stream_id', { stream: name });
    if (found.status !== 200) throw new Error(`world: channel ${name}: ${found.body}`);
    ids[name] = found.json.stream_id as number;
  }
  return { ...who, f, channels: ids } as World<U, C>;
}
