import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ByteArena } from '../../src/state/byte-arena.js';

/** The bytes of `handle`, copied out of its page. */
function read(arena: ByteArena, handle: number): number[] {
  const page = arena.locate(handle);
  return [...page.subarray(arena.start, arena.end)];
}

function bytesOf(length: number, seed: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff);
}

/** Writes `bytes` as the value of `handle` when it fits, or in a new slot (the old one freed). */
function rewrite(arena: ByteArena, handle: number, bytes: Uint8Array): number {
  if (arena.fits(handle, bytes.length)) {
    arena.write(handle, bytes, 0, bytes.length);
    return handle;
  }
  const moved = arena.alloc(bytes.length);
  arena.write(moved, bytes, 0, bytes.length);
  arena.release(handle);
  return moved;
}

describe('ByteArena', () => {
  it('keeps every value apart through allocations, rewrites and releases of any size', () => {
    const size = fc.oneof(
      fc.integer({ min: 1, max: 64 }),
      fc.integer({ min: 65, max: 5_000 }),
      fc.integer({ min: 60_000, max: 70_000 }), // around the largest slot, and beyond it
    );
    const op = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), size }),
      fc.record({ kind: fc.constant('rewrite' as const), which: fc.nat(), size }),
      fc.record({ kind: fc.constant('release' as const), which: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const arena = new ByteArena();
        const live: { handle: number; bytes: Uint8Array }[] = [];
        ops.forEach((o, seed) => {
          if (o.kind === 'add') {
            const bytes = bytesOf(o.size, seed);
            const handle = arena.alloc(bytes.length);
            arena.write(handle, bytes, 0, bytes.length);
            live.push({ handle, bytes });
          } else if (live.length !== 0) {
            const i = o.which % live.length;
            if (o.kind === 'release') {
              arena.release(live[i]!.handle);
              live.splice(i, 1);
            } else {
              const bytes = bytesOf(o.size, seed);
              live[i] = { handle: rewrite(arena, live[i]!.handle, bytes), bytes };
            }
          }
          for (const v of live) assert.deepEqual(read(arena, v.handle), [...v.bytes]);
        });
        assert.equal(new Set(live.map((v) => v.handle)).size, live.length, 'no two values share a slot');
      }),
      { numRuns: 60 },
    );
  });

  it('hands out small integer handles and reuses a freed slot before making another', () => {
    const arena = new ByteArena();
    const a = arena.alloc(10);
    const b = arena.alloc(10);
    assert.ok(Number.isInteger(a) && a >= 0 && a < 2 ** 30);
    assert.notEqual(a, b);
    arena.release(a);
    assert.equal(arena.alloc(20), a, 'a value of the same slot size takes the freed slot');
  });

  it('counts the bytes of the slots in use', () => {
    const arena = new ByteArena();
    assert.equal(arena.bytesHeld, 0);
    const small = arena.alloc(28); // 28 bytes and the 4-byte length: one 32-byte slot
    const larger = arena.alloc(29); // one byte more: a 64-byte slot
    const huge = arena.alloc(100_000); // beyond the largest slot: an array of its own
    assert.equal(arena.bytesHeld, 32 + 64 + 100_000);
    assert.equal(arena.fits(small, 28), true);
    assert.equal(arena.fits(small, 29), false);
    arena.release(larger);
    arena.release(huge);
    assert.equal(arena.bytesHeld, 32);
  });
});
