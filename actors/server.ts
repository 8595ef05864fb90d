/**
 * The server actor: the organizations, by id and by subdomain, and the server-wide
 * message id counter.
 */
import { ApiError, badRequest } from './errors.js';
import type { Fact } from './facts.js';
import { domainLogic, type Decision, type DecideEnv } from './logic.js';
import { makeUser } from './organization.js';
import { Role, type OrgRecord } from './types.js';

/** State of the server actor. */
export interface ServerContext {
  seq: number;
  orgs: Map<number, OrgRecord>;
  bySubdomain: Map<string, number>;
  /** The highest message id ever assigned; the next one is this plus one. */
  maxMessageId: number;
}

/** Create an organization together with its first owner. */
export interface CreateOrg {
  type: 'CREATE_ORG';
  name: string;
  subdomain: string;
  owner_email: string;
  owner_password_hash: string;
  owner_name: string;
}
/** Deactivate or reactivate an organization (operators only, from the CLI). */
export interface SetOrgActive {
  type: 'SET_ORG_ACTIVE';
  subdomain: string;
  active: boolean;
}
export type ServerCommand = CreateOrg | SetOrgActive;

/** Subdomains are DNS labels, or `""` for the default organization. */
const SUBDOMAIN = /^(|[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)$/;

export function emptyServer(): ServerContext {
  return { seq: 0, orgs: new Map(), bySubdomain: new Map(), maxMessageId: 0 };
}

function decide(ctx: ServerContext, command: ServerCommand, env: DecideEnv): Decision {
  switch (command.type) {
    case 'CREATE_ORG': {
      const subdomain = command.subdomain.toLowerCase();
      if (!SUBDOMAIN.test(subdomain)) throw badRequest(`Invalid subdomain: '${command.subdomain}'`);
      if (ctx.bySubdomain.has(subdomain)) throw new ApiError('BAD_REQUEST', `Subdomain '${subdomain}' is already in use`);
      if (command.name.trim().length === 0 || command.name.length > 40) throw badRequest('Organization name must be 1 to 40 characters');
      let id = 1;
      for (const existing of ctx.orgs.keys()) id = Math.max(id, existing + 1);
      const now = env.now();
      const org: OrgRecord = { id, name: command.name.trim(), subdomain, description: '', date_created: now, deactivated: false };
      const owner = makeUser(env, {
        user_id: 1,
        recipient_id: 1,
        email: command.owner_email,
        password_hash: command.owner_password_hash,
        full_name: command.owner_name,
        role: Role.OWNER,
      });
      return { facts: [{ type: 'OrgCreated', org, owner }], value: { org, owner } };
    }
    case 'SET_ORG_ACTIVE': {
      const id = ctx.bySubdomain.get(command.subdomain.toLowerCase());
      const org = id === undefined ? undefined : ctx.orgs.get(id);
      if (!org) throw badRequest(`No organization with subdomain '${command.subdomain}'`);
      if (org.deactivated === !command.active) return { facts: [], value: { organization_id: org.id, active: command.active } };
      return { facts: [{ type: 'OrgActivationChanged', org: org.id, active: command.active }], value: { organization_id: org.id, active: command.active } };
    }
  }
}

function reduce(ctx: ServerContext, fact: Fact): void {
  switch (fact.type) {
    case 'OrgCreated':
      ctx.orgs.set(fact.org.id, { ...fact.org });
      ctx.bySubdomain.set(fact.org.subdomain, fact.org.id);
      break;
    case 'OrgActivationChanged': {
      const org = ctx.orgs.get(fact.org);
      if (org) org.deactivated = !fact.active;
      break;
    }
    case 'MessageSent':
      if (fact.message.id > ctx.maxMessageId) ctx.maxMessageId = fact.message.id;
      break;
    default:
      break;
  }
}

/** XState logic of the server actor. */
export const serverLogic = domainLogic<ServerContext, ServerCommand>({ decide, reduce });
