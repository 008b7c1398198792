import { ErrorCode, MillraceError } from '../errors.js';

/** Slots of class c hold 32 << c bytes: 32 B … 64 KiB. */
const MIN_SLOT_SHIFT = 5;
const CLASSES = 12;
/** Values longer than the largest slot (less its header) get an array of their own. */
const HUGE = 15;
const CLASS_BITS = 4;
const CLASS_MASK = (1 << CLASS_BITS) - 1;
/** A slot's first bytes: the length of the value it holds (little-endian). */
const HEADER = 4;
const PAGE_SHIFT = 20;
/** Slots of one class, at most: handles stay small integers (below 2^30). */
const MAX_SLOTS = 1 << 26;

/**
 * Byte strings kept where the garbage collector does not walk them: packed state values, each in
 * a slot of a 1-MiB page, named by a handle — a small integer, so a `Map` from keys to handles
 * holds no pointer to a young object.
 *
 * Why: values kept as objects on the JavaScript heap outlive every young-generation collection
 * that sees them, so each scavenge copies the values written since the last one (twice: to the
 * survivor space, then to the old generation) and scans the old entries that point to them. A
 * keyed state written on every row made scavenges of 3–4 ms every ≈ 70 ms (E4, 1 M cards). Bytes
 * in a page cost a scavenge nothing; the objects a read unpacks die young.
 *
 * Slots come in 12 sizes, from 32 bytes to 64 KiB (a value takes the smallest that holds it and
 * its 4-byte length); a freed slot goes on its size's free list and is handed out again first.
 * A value rewritten in place keeps its handle while it fits its slot. Pages are never moved or
 * copied: growing the arena adds a page.
 */
export class ByteArena {
  private readonly pages: Uint8Array[][] = Array.from({ length: CLASSES }, () => []);
  /** Per class: slots handed out so far (in use or freed); every slot index is below it. */
  private readonly made = new Int32Array(CLASSES);
  private readonly free: number[][] = Array.from({ length: CLASSES }, () => []);
  private readonly huge: (Uint8Array | null)[] = [];
  private readonly hugeFree: number[] = [];
  private held = 0;
  /** Where the bytes {@link locate} found start and end in their page. */
  start = 0;
  end = 0;

  /** Bytes of the slots in use (what the values take, rounded up to their slots). */
  get bytesHeld(): number {
    return this.held;
  }

  /** A handle for a value of `length` bytes (its bytes are then {@link write}n). */
  alloc(length: number): number {
    const c = classOf(length);
    if (c === HUGE) return this.allocHuge(length);
    this.held += slotBytes(c);
    const free = this.free[c]!;
    if (free.length !== 0) return (free.pop()! << CLASS_BITS) | c;
    const slot = this.made[c]!;
    if (slot === MAX_SLOTS)
      throw new MillraceError(
        ErrorCode.STATE_TOO_LARGE,
        `a task's state holds ${MAX_SLOTS} values of up to ${slotBytes(c) - HEADER} bytes, as many as one task ` +
          'can keep; spread the state over more tasks (shufflePartitions)',
      );
    this.made[c] = slot + 1;
    const perPage = PAGE_SHIFT - MIN_SLOT_SHIFT - c;
    if (slot >>> perPage === this.pages[c]!.length) this.pages[c]!.push(new Uint8Array(1 << PAGE_SHIFT));
    return (slot << CLASS_BITS) | c;
  }

  /** Whether `length` bytes can be written over the value of `handle` (same handle). */
  fits(handle: number, length: number): boolean {
    const c = handle & CLASS_MASK;
    if (c === HUGE) return this.huge[handle >>> CLASS_BITS]!.length === length;
    return length + HEADER <= slotBytes(c);
  }

  /** Writes `bytes[from, to)` as the value of `handle` (it must {@link fits}). */
  write(handle: number, bytes: Uint8Array, from: number, to: number): void {
    const c = handle & CLASS_MASK;
    const n = to - from;
    if (c === HUGE) {
      this.huge[handle >>> CLASS_BITS]!.set(bytes.subarray(from, to));
      return;
    }
    const page = this.pageOf(handle, c);
    const at = this.start - HEADER;
    page[at] = n;
    page[at + 1] = n >>> 8;
    page[at + 2] = n >>> 16;
    page[at + 3] = n >>> 24;
    // set() with a view: ≈ 70 ns for 64–512 bytes, where a byte loop takes 150–1 000 ns (pages
    // are not shared memory, where small copies go the other way).
    page.set(bytes.subarray(from, to), at + HEADER);
  }

  /** The array holding the value of `handle`: its bytes are at [{@link start}, {@link end}). */
  locate(handle: number): Uint8Array {
    const c = handle & CLASS_MASK;
    if (c === HUGE) {
      const bytes = this.huge[handle >>> CLASS_BITS]!;
      this.start = 0;
      this.end = bytes.length;
      return bytes;
    }
    const page = this.pageOf(handle, c);
    const at = this.start - HEADER;
    this.end =
      this.start + (page[at]! | (page[at + 1]! << 8) | (page[at + 2]! << 16) | (page[at + 3]! << 24));
    return page;
  }

  /** The slot of `handle` is free again; the handle must no longer be used. */
  release(handle: number): void {
    const c = handle & CLASS_MASK;
    const slot = handle >>> CLASS_BITS;
    if (c === HUGE) {
      this.held -= this.huge[slot]!.length;
      this.huge[slot] = null;
      this.hugeFree.push(slot);
      return;
    }
    this.held -= slotBytes(c);
    this.free[c]!.push(slot);
  }

  /** The page of a slot of class `c`; sets {@link start} to the slot's bytes after its header. */
  private pageOf(handle: number, c: number): Uint8Array {
    const slot = handle >>> CLASS_BITS;
    const perPage = PAGE_SHIFT - MIN_SLOT_SHIFT - c;
    this.start = ((slot & ((1 << perPage) - 1)) << (MIN_SLOT_SHIFT + c)) + HEADER;
    return this.pages[c]![slot >>> perPage]!;
  }

  private allocHuge(length: number): number {
    const bytes = new Uint8Array(length);
    this.held += length;
    const slot = this.hugeFree.length !== 0 ? this.hugeFree.pop()! : this.huge.length;
    this.huge[slot] = bytes;
    return (slot << CLASS_BITS) | HUGE;
  }
}

const slotBytes = (c: number): number => 1 << (MIN_SLOT_SHIFT + c);

/** The smallest class whose slots hold `length` bytes and the header, or {@link HUGE}. */
function classOf(length: number): number {
  const need = length + HEADER;
  let c = 0;
  while (c < CLASSES && slotBytes(c) < need) c++;
  return c === CLASSES ? HUGE : c;
}
