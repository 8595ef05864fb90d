/**
 * Operator commands on organizations, each on a stopped server's data directory:
 * create one, deactivate or reactivate one, and let an owner change other users' emails.
 */
import { createOrganization, createStarterChannels } from '../bootstrap.js';
import { openOffline } from './data_commands.js';

/** `parley create-org`: creates an organization, its owner and its starter channels; prints them. */
export async function createOrgCommand(dataDir: string, org: { name: string; subdomain: string; ownerEmail: string; ownerPassword: string; ownerName: string }): Promise<void> {
  const store = openOffline(dataDir);
  try {
    const created = await createOrganization(store.runtime, org);
    await createStarterChannels(store.runtime, created);
    console.log(JSON.stringify(created));
  } finally {
    await store.close();
  }
}

/** `parley deactivate-org` / `reactivate-org`. */
export async function setOrgActiveCommand(dataDir: string, subdomain: string, active: boolean): Promise<void> {
  const store = openOffline(dataDir);
  try {
    const value = await store.runtime.execute({ type: 'SET_ORG_ACTIVE', subdomain, active });
    console.log(JSON.stringify(value));
  } finally {
    await store.close();
  }
}

/** `parley grant-email-changes`: grants (or takes back) an owner's permission to change other users' emails (Zulip's `can_change_user_emails`). */
export async function grantEmailChangesCommand(dataDir: string, subdomain: string, email: string, granted: boolean): Promise<void> {
  const store = openOffline(dataDir);
  try {
    const orgId = store.runtime.server().bySubdomain.get(subdomain);
    if (orgId === undefined) throw new Error(`no organization with subdomain '${subdomain}'`);
    const userId = store.runtime.org(orgId)!.byEmail.get(email.toLowerCase());
    if (userId === undefined) throw new Error(`no user '${email}'`);
    await store.runtime.execute({ type: 'GRANT_EMAIL_CHANGES', org: orgId, user_id: userId, granted });
    console.log(JSON.stringify({ user_id: userId, can_change_user_emails: granted }));
  } finally {
    await store.close();
  }
}
