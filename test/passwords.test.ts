/**
 * Password hashes record what derived them (actors/rules/passwords.ts): a hash at Parley's
 * cost, `scrypt$salt$key`, verifies at N = 16384 in any process, and one at the test suite's
 * cost, `scrypt$N=…,r=8,p=1$salt$key`, at its own N. The test cost is refused in production.
 */
import t from 'tap';
import { scryptSync } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { hashPassword, NO_PASSWORD_HASH, verifyPassword } from '../actors/rules/passwords.js';
import { built } from './built.js';

t.test('this process hashes at the test cost, and says so in the hash', async (t) => {
  t.equal(process.env.PARLEY_TEST_SCRYPT_N, '16', 'test/tap_preload.mjs sets the test cost');
  const h = await hashPassword('secret');
  t.match(h, /^scrypt\$N=16,r=8,p=1\$[0-9a-f]{32}\$[0-9a-f]{64}$/);
  t.ok(await verifyPassword('secret', h));
  t.notOk(await verifyPassword('secreT', h));
  t.notOk(await verifyPassword('secret\u0000', h), 'a NUL still never matches');
  t.equal(NO_PASSWORD_HASH, 'scrypt$N=16,r=8,p=1$00$00', 'the no-password stand-in costs what a hash of this process costs');
  t.notOk(await verifyPassword('', NO_PASSWORD_HASH));
});

t.test("a hash at Parley's cost verifies at that cost, whatever this process's", async (t) => {
  const salt = Buffer.alloc(16, 7);
  const key = scryptSync('secret', salt, 32, { N: 16384, r: 8, p: 1 });
  const h = `scrypt$${salt.toString('hex')}$${key.toString('hex')}`;
  t.ok(await verifyPassword('secret', h));
  t.notOk(await verifyPassword('other', h));
  // The same key under a parameter field that names another N does not verify.
  t.notOk(await verifyPassword('secret', `scrypt$N=16,r=8,p=1$${salt.toString('hex')}$${key.toString('hex')}`));
});

t.test('malformed parameter fields never match', async (t) => {
  const h = await hashPassword('secret');
  const [, , salt, key] = h.split('$');
  for (const params of ['N=16384,r=8,p=1', 'N=17,r=8,p=1', 'N=16,r=1,p=1', 'N=1,r=8,p=1', 'N=32768,r=8,p=1', 'n=16,r=8,p=1', '']) {
    t.notOk(await verifyPassword('secret', `scrypt$${params}$${salt}$${key}`), JSON.stringify(params));
  }
  t.notOk(await verifyPassword('secret', `scrypt$N=16,r=8,p=1$${salt}$${key}$x`), 'five fields');
  t.notOk(await verifyPassword('secret', `bcrypt$N=16,r=8,p=1$${salt}$${key}`), 'another scheme');
});

t.test('the test cost: refused with NODE_ENV=production, checked otherwise, and Parley\'s cost without it', async (t) => {
  const load = (env: Record<string, string | undefined>): { status: number | null; stdout: string; stderr: string } => {
    const childEnv: Record<string, string | undefined> = { ...process.env, ...env };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
    const code = `import(${JSON.stringify(built('actors/rules/passwords.ts'))}).then(async (m) => console.log(await m.hashPassword('x')))`;
    const r = spawnSync(process.execPath, ['-e', code], { env: childEnv as NodeJS.ProcessEnv, encoding: 'utf8' });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const prod = load({ NODE_ENV: 'production', PARLEY_TEST_SCRYPT_N: '16' });
  t.not(prod.status, 0, 'a production process does not start with it');
  t.match(prod.stderr, /PARLEY_TEST_SCRYPT_N is for the test suite: refused with NODE_ENV=production/);
  const bad = load({ NODE_ENV: undefined, PARLEY_TEST_SCRYPT_N: '1000' });
  t.not(bad.status, 0, 'an N that is not a power of two is refused');
  t.match(bad.stderr, /must be a power of two/);
  const plain = load({ NODE_ENV: undefined, PARLEY_TEST_SCRYPT_N: undefined });
  t.equal(plain.status, 0, plain.stderr);
  t.match(plain.stdout.trim(), /^scrypt\$[0-9a-f]{32}\$[0-9a-f]{64}$/, "without it, Parley's cost and the hash form servers have always written");
});
