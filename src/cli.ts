#!/usr/bin/env node
/**
 * `npx parley <command>`: the operator CLI.
 *
 *   parley serve [options]          run the server (same as npm start)
 *   parley create-org --data-dir DIR --name NAME --subdomain SUB
 *                     --owner-email EMAIL --owner-password PASSWORD [--owner-name NAME]
 */
import { createOrganization, createStarterChannels } from './bootstrap.js';
import { ApiError } from '../actors/errors.js';
import { boardStatusCommand, boardSwitchCommand, parseBoardArgs } from './operator/board_commands.js';
import { acceptInviteCommand, outboxCommand } from './operator/invite_commands.js';
import { compactCommand, inspectCommand, listSnapshotsCommand, openOffline, restoreCommand, snapshotCommand, verifyCommand } from './operator/data_commands.js';

const USAGE = `Usage:
  parley serve [options]                 run the server (see parley serve --help)
  parley create-org --data-dir DIR --name NAME --subdomain SUB \\
                    --owner-email EMAIL --owner-password PASSWORD [--owner-name NAME]
                                         create an organization on a stopped server's data directory
  parley deactivate-org --data-dir DIR --subdomain SUB
  parley reactivate-org --data-dir DIR --subdomain SUB
                                         deactivate or reactivate an organization (stopped server)
  parley grant-email-changes --subdomain SUB --email EMAIL [--revoke] [--data-dir DIR]
                                         let an owner change other users' emails (stopped server)
  parley accept-invite --subdomain SUB --key KEY --full-name NAME --password PASSWORD [--email EMAIL] [--data-dir DIR]
                                         accept an invitation: make its account (stopped server); --email for reusable links
  parley outbox [--show FILE] [--data-dir DIR]
                                         list the mail in the outbox (DIR/outbox), or print one message
  parley snapshot  [--data-dir DIR]      take a snapshot now (asks the running server, or works offline)
  parley snapshots [--data-dir DIR]      list snapshots: time, seq, size, verified or not
  parley verify    [--data-dir DIR]      verify every snapshot and log segment, and every uploaded file a
                                         snapshot names: present, size, SHA-256 (exit 1 if any is corrupt or missing)
  parley inspect   [--data-dir DIR]      counts per organization: users, channels, messages, queues
  parley restore --from SNAPSHOT --to NEW_DIR [--to-seq N] [--data-dir DIR]
                                         rebuild a snapshot (plus the log up to seq N) into a fresh directory,
                                         with the uploaded files it names (exit 1 if one is missing or corrupt)
  parley compact   [--data-dir DIR] [--keep K]
                                         snapshot, then delete older snapshots and the log they alone cover
  parley board guestbook on|off [--data-dir DIR]
                                         turn guestbook publication on or off (running server: at once)
  parley board compat on|off [--data-dir DIR]
                                         turn GET compatibility publication on or off
  parley board status [--data-dir DIR]   show both board switches

--data-dir defaults to $PARLEY_DATA_DIR or ./data.
`;

/** Parses `--flag value` pairs; every flag must be one of `allowed`. */
export function parseFlags(argv: string[], allowed: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    if (!allowed.includes(flag)) throw new Error(`unknown option ${flag}`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    out.set(flag, value);
  }
  return out;
}

function required(flags: Map<string, string>, name: string): string {
  const v = flags.get(name);
  if (v === undefined) throw new Error(`${name} is required`);
  return v;
}

async function createOrg(argv: string[]): Promise<void> {
  const flags = parseFlags(argv, ['--data-dir', '--name', '--subdomain', '--owner-email', '--owner-password', '--owner-name']);
  const store = openOffline(required(flags, '--data-dir'));
  try {
    const created = await createOrganization(store.runtime, {
      name: required(flags, '--name'),
      subdomain: required(flags, '--subdomain'),
      ownerEmail: required(flags, '--owner-email'),
      ownerPassword: required(flags, '--owner-password'),
      ownerName: flags.get('--owner-name') ?? required(flags, '--owner-email').split('@')[0],
    });
    await createStarterChannels(store.runtime, created);
    console.log(JSON.stringify(created));
  } finally {
    await store.close();
  }
}

async function setOrgActive(argv: string[], active: boolean): Promise<void> {
  const flags = parseFlags(argv, ['--data-dir', '--subdomain']);
  const store = openOffline(required(flags, '--data-dir'));
  try {
    const value = await store.runtime.execute({ kind: 'server', command: { type: 'SET_ORG_ACTIVE', subdomain: required(flags, '--subdomain'), active } });
    console.log(JSON.stringify(value));
  } finally {
    await store.close();
  }
}

/** Grants (or with --revoke, takes back) an owner's permission to change other users' emails (Zulip's `can_change_user_emails`). */
async function grantEmailChanges(argv: string[]): Promise<void> {
  const revoke = argv.includes('--revoke');
  const flags = parseFlags(argv.filter((a) => a !== '--revoke'), ['--data-dir', '--subdomain', '--email']);
  const store = openOffline(dataDirOf(flags));
  try {
    const server = store.runtime.server();
    const orgId = server.bySubdomain.get(flags.get('--subdomain') ?? '');
    if (orgId === undefined) throw new Error(`no organization with subdomain '${flags.get('--subdomain') ?? ''}'`);
    const userId = store.runtime.org(orgId)!.byEmail.get(required(flags, '--email').toLowerCase());
    if (userId === undefined) throw new Error(`no user '${required(flags, '--email')}'`);
    await store.runtime.execute({ kind: 'org', org: orgId, command: { type: 'GRANT_EMAIL_CHANGES', org: orgId, user_id: userId, granted: !revoke } });
    console.log(JSON.stringify({ user_id: userId, can_change_user_emails: !revoke }));
  } finally {
    await store.close();
  }
}

function dataDirOf(flags: Map<string, string>): string {
  return flags.get('--data-dir') ?? process.env.PARLEY_DATA_DIR ?? './data';
}

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  switch (command) {
    case 'serve':
      process.argv = [process.argv[0], process.argv[1], ...rest];
      await import('./main.js');
      return;
    case 'create-org':
      await createOrg(rest);
      return;
    case 'deactivate-org':
      await setOrgActive(rest, false);
      return;
    case 'reactivate-org':
      await setOrgActive(rest, true);
      return;
    case 'grant-email-changes':
      await grantEmailChanges(rest);
      return;
    case 'accept-invite': {
      const flags = parseFlags(rest, ['--data-dir', '--subdomain', '--key', '--full-name', '--password', '--email']);
      await acceptInviteCommand(dataDirOf(flags), {
        subdomain: flags.get('--subdomain') ?? '', key: required(flags, '--key'), fullName: required(flags, '--full-name'), password: required(flags, '--password'), email: flags.get('--email'),
      });
      return;
    }
    case 'outbox': {
      const flags = parseFlags(rest, ['--data-dir', '--show']);
      outboxCommand(dataDirOf(flags), flags.get('--show'));
      return;
    }
    case 'snapshot':
      await snapshotCommand(dataDirOf(parseFlags(rest, ['--data-dir'])));
      return;
    case 'snapshots':
      listSnapshotsCommand(dataDirOf(parseFlags(rest, ['--data-dir'])));
      return;
    case 'verify':
      if (!verifyCommand(dataDirOf(parseFlags(rest, ['--data-dir'])))) process.exitCode = 1;
      return;
    case 'inspect':
      inspectCommand(dataDirOf(parseFlags(rest, ['--data-dir'])));
      return;
    case 'restore': {
      const flags = parseFlags(rest, ['--data-dir', '--from', '--to', '--to-seq']);
      const toSeq = flags.get('--to-seq');
      if (toSeq !== undefined && !/^\d+$/.test(toSeq)) throw new Error('--to-seq must be a non-negative integer');
      if (!(await restoreCommand(dataDirOf(flags), required(flags, '--from'), required(flags, '--to'), toSeq === undefined ? undefined : Number(toSeq)))) process.exitCode = 1;
      return;
    }
    case 'compact': {
      const flags = parseFlags(rest, ['--data-dir', '--keep']);
      const keep = Number(flags.get('--keep') ?? '3');
      if (!Number.isInteger(keep) || keep < 1) throw new Error('--keep must be a positive integer');
      await compactCommand(dataDirOf(flags), keep);
      return;
    }
    case 'board': {
      const parsed = parseBoardArgs(rest);
      const dir = dataDirOf(parseFlags(parsed.rest, ['--data-dir']));
      if (parsed.kind === 'status') await boardStatusCommand(dir);
      else await boardSwitchCommand(dir, parsed.name, parsed.on);
      return;
    }
    case undefined:
    case 'help':
    case '--help':
      process.stdout.write(USAGE);
      return;
    default:
      throw new Error(`unknown command '${command}'\n${USAGE}`);
  }
}

main().catch((err: unknown) => {
  const message = err instanceof ApiError ? `${err.code}: ${err.message}` : (err as Error).message;
  console.error(`parley: ${message}`);
  process.exit(2);
});
