/**
 * Operator commands for joining: `parley accept-invite` makes the account an
 * invitation offers (the same command as `POST /api/v1/parley/invites/accept`), and
 * `parley outbox` lists or shows the mail waiting in the outbox.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashPassword } from '../../actors/rules/passwords.js';
import { outboxDir } from '../mail/mailer.js';
import { openOffline } from './data_commands.js';

/** `parley accept-invite`: accepts an invitation on a stopped server's data directory and prints the new account. */
export async function acceptInviteCommand(dataDir: string, a: { subdomain: string; key: string; fullName: string; password: string; email?: string }): Promise<void> {
  const store = openOffline(dataDir);
  try {
    const org = store.runtime.server().bySubdomain.get(a.subdomain);
    if (org === undefined) throw new Error(`no organization with subdomain '${a.subdomain}'`);
    const password_hash = await hashPassword(a.password);
    const key = a.key.replace(/^.*\/join\/|\/$/g, '');
    const { user } = await store.runtime.execute({ type: 'ACCEPT_INVITE', org, key, full_name: a.fullName, password_hash, email: a.email });
    console.log(JSON.stringify({ user_id: user.user_id, email: user.email, role: user.role, api_key: user.api_key }));
  } finally {
    await store.close();
  }
}

/** Decodes RFC 2047 encoded words (`=?UTF-8?B?...?=`, `=?UTF-8?Q?...?=`) in a header value. */
function decodeHeader(value: string): string {
  return value.replace(/=\?utf-8\?([bq])\?([^?]*)\?=\s*/gi, (_, enc: string, text: string) =>
    enc.toLowerCase() === 'b' ? Buffer.from(text, 'base64').toString('utf8') : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9a-f]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1').toString('utf8'),
  ).trim();
}

/** The named headers of a message (folded lines joined). */
function headers(raw: string): Map<string, string> {
  const head = raw.split(/\r?\n\r?\n/, 1)[0].replace(/\r?\n[ \t]+/g, ' ');
  const out = new Map<string, string>();
  for (const line of head.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) out.set(line.slice(0, colon).toLowerCase(), decodeHeader(line.slice(colon + 1)));
  }
  return out;
}

/** A message's body as text, undoing its transfer encoding (quoted-printable or base64). */
function bodyText(raw: string, h: Map<string, string>): string {
  const body = raw.slice(raw.search(/\r?\n\r?\n/)).replace(/^\r?\n\r?\n/, '');
  const encoding = (h.get('content-transfer-encoding') ?? '').toLowerCase();
  if (encoding === 'base64') return Buffer.from(body, 'base64').toString('utf8');
  if (encoding !== 'quoted-printable') return body;
  return Buffer.from(body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8');
}

/**
 * `parley outbox`: one line per message (file, date, to, subject), oldest first;
 * `--show FILE` prints one message, its headers decoded and its body as plain text.
 */
export function outboxCommand(dataDir: string, show?: string): void {
  const dir = outboxDir(dataDir);
  if (show !== undefined) {
    if (!/^[0-9]+-[0-9a-f]+\.eml$/.test(show) || !existsSync(join(dir, show))) throw new Error(`no message '${show}' in ${dir}`);
    const raw = readFileSync(join(dir, show), 'utf8');
    const h = headers(raw);
    const head = ['from', 'to', 'subject', 'date'].map((k) => `${k[0].toUpperCase()}${k.slice(1)}: ${h.get(k) ?? ''}`);
    process.stdout.write(`${head.join('\n')}\n\n${bodyText(raw, h).replace(/\r\n/g, '\n')}`);
    return;
  }
  const names = existsSync(dir) ? readdirSync(dir).filter((n) => n.endsWith('.eml') && !n.startsWith('.')).sort() : [];
  if (names.length === 0) {
    console.log('outbox is empty');
    return;
  }
  for (const name of names) {
    const h = headers(readFileSync(join(dir, name), 'utf8'));
    console.log([name, h.get('date') ?? '', h.get('to') ?? '', h.get('subject') ?? ''].join('\t'));
  }
}
