/**
 * Outgoing mail: the configuration chooses the outbox or SMTP; the outbox writes whole
 * `.eml` files; the SMTP mailer talks to a server (a minimal one, in this test).
 */
import t from 'tap';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { mailFrom, outboxMailer, smtpMailer } from '../src/mail/mailer.js';

t.test('configuration', async (t) => {
  const c = loadConfig(['--smtp-host', 'mail.example', '--smtp-port', '465', '--smtp-secure', '--smtp-user', 'u', '--mail-from', 'Team <team@example.com>'], { PARLEY_SMTP_PASSWORD: 'secret' });
  t.same([c.smtpHost, c.smtpPort, c.smtpSecure, c.smtpUser, c.smtpPassword, c.mailFrom], ['mail.example', 465, true, 'u', 'secret', 'Team <team@example.com>']);
  const d = loadConfig([], {});
  t.same([d.smtpHost, d.smtpPort, d.smtpSecure, mailFrom(d)], ['', 587, false, 'Parley <noreply@localhost>']);
});

t.test('the outbox holds one whole .eml per message, headers encoded', async (t) => {
  const dir = join(mkdtempSync(join(tmpdir(), 'parley-mail-')), 'outbox');
  const mailer = outboxMailer(dir, 'Parley <noreply@example.com>', () => 1_800_000_000_000);
  await mailer.send({ to: 'a@example.com', subject: 'Zoë invited you', text: 'hello\n' });
  const files = readdirSync(dir);
  t.equal(files.length, 1);
  t.match(files[0], /^1800000000000-[0-9a-f]{8}\.eml$/);
  const raw = readFileSync(join(dir, files[0]), 'utf8');
  t.match(raw, /^To: a@example\.com$/m);
  t.match(raw, /^Subject: =\?UTF-8\?Q\?Zo=C3=AB_invited_you\?=$/m, 'a non-ASCII subject is RFC 2047 encoded');
  t.match(raw, /^From: Parley <noreply@example\.com>$/m);
});

t.test('SMTP: the message reaches the server', async (t) => {
  let received = '';
  const server = createServer((socket) => {
    let data = false;
    socket.write('220 test ESMTP\r\n');
    socket.on('data', (chunk) => {
      for (const line of chunk.toString('utf8').split('\r\n').filter((l, i, a) => l !== '' || i < a.length - 1)) {
        if (data) {
          if (line === '.') {
            data = false;
            socket.write('250 queued\r\n');
          } else received += `${line}\n`;
        } else if (/^(EHLO|HELO)/i.test(line)) socket.write('250 test\r\n');
        else if (/^DATA/i.test(line)) {
          data = true;
          socket.write('354 go on\r\n');
        } else if (/^QUIT/i.test(line)) socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const port = (server.address() as AddressInfo).port;
  const mailer = smtpMailer({ smtpHost: '127.0.0.1', smtpPort: port, smtpSecure: false, smtpUser: '', smtpPassword: '' }, 'Parley <noreply@example.com>');
  await mailer.send({ to: 'b@example.com', subject: 'Join us', text: 'key: abc\n' });
  t.match(received, /^To: b@example\.com$/m);
  t.match(received, /^Subject: Join us$/m);
  t.match(received, 'key: abc');
});
