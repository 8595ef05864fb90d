/**
 * Outgoing mail. Without SMTP settings, mail goes to the outbox: a directory of
 * `.eml` files in the data directory (`parley outbox` lists them). With `--smtp-host`,
 * it goes through nodemailer's SMTP transport. Either way a message is built by
 * nodemailer, so headers are encoded as mail readers expect.
 *
 * Callers send only after the facts a mail reports are durable, and replay never
 * sends: mail is the HTTP layer's business, not the reducers'.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import nodemailer from 'nodemailer';
import type { Config } from '../config.js';

/** One message to send. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Where mail goes. */
export interface Mailer {
  send(mail: Mail): Promise<void>;
}

/** The outbox directory of a data directory. */
export function outboxDir(dataDir: string): string {
  return join(dataDir, 'outbox');
}

/** Builds the RFC 5322 bytes of a message. */
async function compose(from: string, mail: Mail): Promise<Buffer> {
  const builder = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  const info = await builder.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
  return info.message as Buffer;
}

/** Writes each message to `dir` as `<ms>-<random>.eml`, whole or not at all (temp file, then rename). */
export function outboxMailer(dir: string, from: string, now: () => number = Date.now): Mailer {
  return {
    async send(mail) {
      const bytes = await compose(from, mail);
      mkdirSync(dir, { recursive: true });
      const name = `${String(now()).padStart(13, '0')}-${randomBytes(4).toString('hex')}.eml`;
      const tmp = join(dir, `.${name}.tmp`);
      writeFileSync(tmp, bytes);
      renameSync(tmp, join(dir, name));
    },
  };
}

/** Sends through an SMTP server. */
export function smtpMailer(config: Pick<Config, 'smtpHost' | 'smtpPort' | 'smtpSecure' | 'smtpUser' | 'smtpPassword'>, from: string): Mailer {
  const transport = nodemailer.createTransport({
    host: config.smtpHost,
    port: config.smtpPort,
    secure: config.smtpSecure,
    ...(config.smtpUser ? { auth: { user: config.smtpUser, pass: config.smtpPassword } } : {}),
  });
  return {
    async send(mail) {
      await transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
    },
  };
}

/** Keeps messages in memory, composed as they would be written (for tests). */
export function memoryMailer(from = 'Parley <noreply@localhost>'): Mailer & { sent: Array<Mail & { raw: string }> } {
  const sent: Array<Mail & { raw: string }> = [];
  return {
    sent,
    async send(mail) {
      sent.push({ ...mail, raw: (await compose(from, mail)).toString('utf8') });
    },
  };
}

/** The sender address: `--mail-from`, else `noreply@` the external host. */
export function mailFrom(config: Pick<Config, 'mailFrom' | 'externalHost'>): string {
  return config.mailFrom || `Parley <noreply@${config.externalHost}>`;
}

/** The mailer the configuration asks for. */
export function mailerFor(config: Config): Mailer {
  return config.smtpHost ? smtpMailer(config, mailFrom(config)) : outboxMailer(outboxDir(config.dataDir), mailFrom(config));
}
