/**
 * IdSet, the sorted id set behind personal flags, as a model test: any sequence of
 * adds, removals and batch changes leaves it holding what a plain Set would, in
 * ascending order.
 */
import t from 'tap';
import fc from 'fast-check';
import { IdSet } from '../actors/shared/id_set.js';

type Op =
  | { op: 'add'; id: number }
  | { op: 'delete'; id: number }
  | { op: 'addMany'; ids: number[] }
  | { op: 'deleteMany'; ids: number[] };

// Small ids collide often (duplicates, removals that hit); large ones test the Uint32 range.
const id = fc.oneof(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 0xffff_fffe }));
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: id.map((v) => ({ op: 'add' as const, id: v })) },
  { weight: 3, arbitrary: id.map((v) => ({ op: 'delete' as const, id: v })) },
  { weight: 2, arbitrary: fc.array(id, { maxLength: 20 }).map((ids) => ({ op: 'addMany' as const, ids })) },
  { weight: 2, arbitrary: fc.array(id, { maxLength: 20 }).map((ids) => ({ op: 'deleteMany' as const, ids })) },
);

t.test('behaves as a Set of numbers, iterated in ascending order', async (t) => {
  fc.assert(
    fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
      const model = new Set<number>();
      const set = new IdSet();
      for (const o of ops) {
        switch (o.op) {
          case 'add':
            set.add(o.id);
            model.add(o.id);
            break;
          case 'delete':
            if (set.delete(o.id) !== model.delete(o.id)) return false;
            break;
          case 'addMany':
            set.addMany(o.ids);
            for (const v of o.ids) model.add(v);
            break;
          case 'deleteMany':
            set.deleteMany(o.ids);
            for (const v of o.ids) model.delete(v);
            break;
        }
      }
      const expected = [...model].sort((a, b) => a - b);
      if (set.size !== expected.length) return false;
      if (JSON.stringify([...set]) !== JSON.stringify(expected)) return false;
      if (JSON.stringify(set.toArray()) !== JSON.stringify(expected)) return false;
      return expected.every((v) => set.has(v)) && !set.has(0) && !set.has(0xffff_ffff);
    }),
    { numRuns: 2000 },
  );
  t.pass('2000 random operation sequences agree with Set');
});

t.test('from() sorts and drops duplicates', async (t) => {
  const set = IdSet.from([30, 10, 20, 10, 30]);
  t.same([...set], [10, 20, 30]);
  t.equal(set.size, 3);
  t.notOk(set.has(15));
});

t.test('appending in id order keeps every id (the common path)', async (t) => {
  const set = new IdSet();
  for (let i = 1; i <= 100_000; i++) set.add(i * 3);
  t.equal(set.size, 100_000);
  t.ok(set.has(3) && set.has(150_000) && set.has(300_000));
  t.notOk(set.has(4));
  set.deleteMany([3, 6, 300_000]);
  t.equal(set.size, 99_997);
  t.notOk(set.has(3));
  t.same(set.toArray().slice(0, 2), [9, 12]);
});

t.test('toBytes and fromBytes round-trip, as snapshots store flag sets', async (t) => {
  fc.assert(
    fc.property(fc.array(id, { maxLength: 300 }), (ids) => {
      const set = IdSet.from(ids);
      const bytes = set.toBytes();
      return bytes.length === set.size * 4 && JSON.stringify([...IdSet.fromBytes(bytes)]) === JSON.stringify([...set]);
    }),
    { numRuns: 500 },
  );
  const le = Buffer.alloc(8);
  le.writeUInt32LE(9, 0);
  le.writeUInt32LE(3, 4);
  t.same([...IdSet.fromBytes(le)], [3, 9], 'bytes out of order are sorted rather than trusted');
  t.same([...IdSet.fromBytes(new Uint8Array(le.buffer, le.byteOffset + 4, 4))], [3], 'a view at an offset reads its own bytes');
  t.throws(() => IdSet.fromBytes(Buffer.alloc(6)), /not a whole number of 4-byte ids/);
});
