/**
 * Creating an organization with its owner: shared by `parley create-org` and by the
 * first start on an empty data directory.
 */
import { randomBytes } from 'node:crypto';
import { hashPassword } from '../actors/passwords.js';
import type { Runtime } from '../actors/runtime.js';
import type { OrgRecord, UserRecord } from '../actors/types.js';

export interface NewOrg {
  name: string;
  subdomain: string;
  ownerEmail: string;
  ownerPassword: string;
  ownerName: string;
}

/** What `create-org` prints. */
export interface CreatedOrg {
  organization_id: number;
  subdomain: string;
  owner: { user_id: number; email: string; api_key: string };
}

/** Creates an organization and its owner; resolves once the facts are durable. */
export async function createOrganization(runtime: Runtime, spec: NewOrg): Promise<CreatedOrg> {
  const owner_password_hash = await hashPassword(spec.ownerPassword);
  const value = (await runtime.execute({
    kind: 'server',
    command: { type: 'CREATE_ORG', name: spec.name, subdomain: spec.subdomain, owner_email: spec.ownerEmail, owner_password_hash, owner_name: spec.ownerName },
  })) as { org: OrgRecord; owner: UserRecord };
  return {
    organization_id: value.org.id,
    subdomain: value.org.subdomain,
    owner: { user_id: value.owner.user_id, email: value.owner.email, api_key: value.owner.api_key },
  };
}

/** A readable random password for the first owner. */
export function randomPassword(): string {
  return randomBytes(12).toString('base64url');
}
