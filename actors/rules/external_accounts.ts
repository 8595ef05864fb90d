/**
 * The external account profile fields Zulip offers ready-made (`zerver/lib/external_accounts.py`).
 */

/** Zulip's `DEFAULT_EXTERNAL_ACCOUNTS`, as `realm_default_external_accounts` lists them. */
export const DEFAULT_EXTERNAL_ACCOUNTS: Record<string, { text: string; url_pattern: string; name: string; hint: string }> = {
  github: { text: 'GitHub', url_pattern: 'https://github.com/%(username)s', name: 'GitHub', hint: 'Enter your GitHub username' },
  twitter: { text: 'X (Twitter)', url_pattern: 'https://x.com/%(username)s', name: 'X', hint: 'Enter your X (Twitter) username' },
};
