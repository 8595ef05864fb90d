/**
 * The invitation email (Zulip's `zerver/emails/invitation`). Parley has no web sign-up
 * page, so the mail gives the key and the API call that accepts it.
 */
import type { EmailInvite } from '../../actors/rules/invites.js';
import type { OrgRecord, UserRecord } from '../../actors/shared/types.js';
import { inviteLink } from '../../actors/rules/invites.js';
import type { Mail } from './mailer.js';

/** The message inviting `invite.email` to `org`, from `referrer`. */
export function invitationMail(org: OrgRecord, referrer: UserRecord, invite: EmailInvite, realmUrl: string): Mail {
  const expiry = invite.expiry === null ? 'It does not expire.' : `It expires at ${new Date(invite.expiry * 1000).toISOString()}.`;
  return {
    to: invite.email,
    subject: `${referrer.full_name} invited you to join ${org.name || 'Parley'}`,
    text: [
      `Hi there,`,
      ``,
      `${referrer.full_name} (${referrer.delivery_email}) wants you to join them on ${org.name || 'Parley'}, at ${realmUrl}.`,
      ``,
      `Your invitation link: ${inviteLink(realmUrl, invite.key)}`,
      `Your invitation key: ${invite.key}`,
      ``,
      `To accept it, choose a name and a password and send them with the key:`,
      ``,
      `  curl -X POST ${realmUrl}/api/v1/parley/invites/accept \\`,
      `    --data-urlencode key=${invite.key} \\`,
      `    --data-urlencode 'full_name=Your Name' \\`,
      `    --data-urlencode 'password=...'`,
      ``,
      `The answer holds your API key. Then log in with ${invite.email} and your password in any Zulip client.`,
      expiry,
      ``,
    ].join('\n'),
  };
}
