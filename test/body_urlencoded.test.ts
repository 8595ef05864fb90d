/**
 * The urlencoded body decoder works on bytes (`decodeUrlEncodedBody`) and must give
 * exactly what decoding the body as UTF-8 text and then with `decodeURIComponent`
 * gives (`decodeUrlEncoded`, still used for query strings): the same names and values,
 * and the same refusal for malformed escapes and for bytes that are not UTF-8.
 */
import t from 'tap';
import fc from 'fast-check';
import { isUtf8 } from 'node:buffer';
import { decodeParams, decodeUrlEncoded, decodeUrlEncodedBody, INVALID_UTF8, MalformedBody } from '../src/http/body.js';

type Outcome = { ok: Array<[string, string]> } | { refused: string };

function outcome(run: (into: Map<string, string>) => void): Outcome {
  const into = new Map<string, string>();
  try {
    run(into);
    return { ok: [...into] };
  } catch (err) {
    if (!(err instanceof MalformedBody)) throw err;
    return { refused: err.message };
  }
}

/** The text path: the body must be UTF-8 as a whole, then it is decoded as text. */
function byText(body: Buffer): Outcome {
  return outcome((into) => {
    if (!isUtf8(body)) throw new MalformedBody(INVALID_UTF8);
    decodeUrlEncoded(body.toString('utf8'), into);
  });
}

t.test('examples', async (t) => {
  const decode = (s: string | Buffer): Outcome => outcome((into) => decodeUrlEncodedBody(Buffer.isBuffer(s) ? s : Buffer.from(s), into));
  t.same(decode('type=stream&to=ab&topic=topic+1&content=A%20%2A%2Abold%2A%2A+caf%C3%A9'), { ok: [['type', 'stream'], ['to', 'ab'], ['topic', 'topic 1'], ['content', 'A **bold** café']] });
  t.same(decode('a=1&a=2&&b&=x&c='), { ok: [['a', '2'], ['b', ''], ['', 'x'], ['c', '']] }, 'later names win; a bare name is empty; empty pairs are skipped');
  t.same(decode('x=%41%4a%4A%2b%25'), { ok: [['x', 'AJJ+%']] }, 'escapes in either case, an escaped + and %');
  t.same(decode('x=caf\u00e9 \u{1F44D}'), { ok: [['x', 'café 👍']] }, 'raw UTF-8 passes through');
  t.same(decode('x=%ZZ'), { refused: 'Malformed percent-encoding in request' });
  t.same(decode('x=ab%4'), { refused: 'Malformed percent-encoding in request' }, 'an escape cut short at the end');
  t.same(decode('x=%FF'), { refused: INVALID_UTF8 }, 'an escape of a byte that is not UTF-8');
  t.same(decode('x=%ED%A0%80'), { refused: INVALID_UTF8 }, 'an escaped surrogate');
  t.same(decode(Buffer.from('x=caf\xe9', 'latin1')), { refused: INVALID_UTF8 }, 'raw bytes that are not UTF-8');
  t.same(decode('x=%C3&y=%A9'), { refused: INVALID_UTF8 }, 'a character split across two values is two invalid values');
  const long = 'x='.concat('%C3%A9'.repeat(5000));
  t.same(decode(long), { ok: [['x', 'é'.repeat(5000)]] }, 'a value longer than the scratch buffer');
  t.same(decode(long), { ok: [['x', 'é'.repeat(5000)]] }, 'and again, with the grown buffer');
});

t.test('decodeParams reads a form body through the byte decoder', async (t) => {
  const { values } = (await decodeParams('application/x-www-form-urlencoded; charset=utf-8', Buffer.from('content=hi+there&to=%5B1%5D'), 'to=q&extra=1')) as { values: Map<string, string> };
  t.same([...values], [['to', '[1]'], ['extra', '1'], ['content', 'hi there']], 'the body wins over the query');
});

t.test('the byte decoder gives what the text decoder gives, on any body', async () => {
  // Bytes that matter to either decoder: separators, escapes and their digits, and pieces of UTF-8 (whole and broken).
  const piece = fc.constantFrom('&', '=', '+', '%', '%2', '%41', '%c3', '%C3%A9', '%e2%82%ac', '%FF', '%ZZ', '%2B', '%25', 'a', 'Z', 'F', '0', '9', ' ', 'é', '€', '👍', '\xc3', '\xa9', '\xff', '\x80');
  const body = fc.array(piece, { maxLength: 24 }).map((parts) => Buffer.concat(parts.map((p) => (p.length === 1 && p.charCodeAt(0) >= 0x80 && p.charCodeAt(0) <= 0xff ? Buffer.from(p, 'latin1') : Buffer.from(p)))));
  fc.assert(
    fc.property(body, (b) => {
      const got = outcome((into) => decodeUrlEncodedBody(b, into));
      const want = byText(b);
      if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`${JSON.stringify(b.toString('latin1'))}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
    }),
    { numRuns: 5000 },
  );
});
