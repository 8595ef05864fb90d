/**
 * Password hashing with scrypt, run on libuv's thread pool so that a login never
 * blocks the event loop that serves long-polls.
 *
 * A hash records what derived it: `scrypt$<salt hex>$<key hex>` is scrypt with Parley's
 * cost (N = 16384, r = 8, p = 1: about 40 ms of CPU), the only form a server writes;
 * `scrypt$N=<n>,r=8,p=1$<salt hex>$<key hex>` names a lower N. Verification derives with
 * the hash's own parameters, whatever the process's cost.
 *
 * The lower cost is for the test suite only, which creates thousands of users (scrypt was
 * most of its CPU): `test/tap_preload.mjs` sets `PARLEY_TEST_SCRYPT_N` for every test
 * process and the servers and CLIs they start. Nothing else sets it, and a process with
 * `NODE_ENV=production` refuses to start with it set.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const KEY_LENGTH = 32;
/** Parley's scrypt cost: N = 2^14. */
const N_DEFAULT = 16384;

/** The N of the hashes this process writes: Parley's, unless the test suite asked for less. */
function processN(): number {
  const raw = process.env.PARLEY_TEST_SCRYPT_N;
  if (raw === undefined || raw === '') return N_DEFAULT;
  if (process.env.NODE_ENV === 'production') throw new Error('PARLEY_TEST_SCRYPT_N is for the test suite: refused with NODE_ENV=production');
  const n = Number(raw);
  if (!validN(n)) throw new Error(`PARLEY_TEST_SCRYPT_N must be a power of two from 2 to ${N_DEFAULT}, not ${JSON.stringify(raw)}`);
  return n;
}

function validN(n: number): boolean {
  return Number.isInteger(n) && n >= 2 && n <= N_DEFAULT && (n & (n - 1)) === 0;
}

const N = processN();

/** The parameter field of a hash made with `n`: none for Parley's cost. */
function prefix(n: number): string {
  return n === N_DEFAULT ? 'scrypt$' : `scrypt$N=${n},r=8,p=1$`;
}

function derive(password: string, salt: Buffer, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, KEY_LENGTH, { N: n, r: 8, p: 1 }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/**
 * What to verify a password against when there is no hash (no such user, or no password):
 * it costs what a real hash of this process costs, and never matches.
 */
export const NO_PASSWORD_HASH = `${prefix(N)}00$00`;

/** Hashes a password into `scrypt$<salt hex>$<key hex>` (with its parameters first at a test cost). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N);
  return `${prefix(N)}${salt.toString('hex')}$${key.toString('hex')}`;
}

/** Checks a password against a stored hash in constant time. An empty or malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts[0] !== 'scrypt') return false;
  let n = N_DEFAULT;
  if (parts.length === 4) {
    const m = /^N=(\d+),r=8,p=1$/.exec(parts[1]);
    if (!m || !validN(Number(m[1])) || Number(m[1]) === N_DEFAULT) return false;
    n = Number(m[1]);
    parts.splice(1, 1);
  } else if (parts.length !== 3) return false;
  const [, saltHex, keyHex] = parts;
  if (!saltHex || !keyHex) return false;
  const expected = Buffer.from(keyHex, 'hex');
  const actual = await derive(password, Buffer.from(saltHex, 'hex'), n);
  // scrypt keys its HMAC with the password, and HMAC pads a short key with zero bytes, so
  // "pw" and "pw\0" derive the same key: a password with a NUL never matches.
  return !password.includes('\u0000') && expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** Compares two secrets in time that does not depend on where they differ. */
export function secretsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  if (x.length !== y.length) {
    timingSafeEqual(x, x);
    return false;
  }
  return timingSafeEqual(x, y);
}
