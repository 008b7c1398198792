import { FNV_START, fnv, KEY_GROUPS, keyGroupOf } from './key-groups.js';
import { compositeKey } from './table-staging.js';

/**
 * One time window of a {@link GroupTable} (or the only one, start 0, of an aggregation without a
 * window): its groups in slots 0..n−1, created in that order. A slot's key is an interned key id;
 * its aggregate states are one JS array per aggregate (numbers stay unboxed in them), so a group
 * is no object at all, and a window that closes is dropped whole. The state arrays may be longer
 * than n (a reused window): only slots below n hold groups.
 */
export class WindowSlab {
  n = 0;
  keyIds = new Int32Array(64);
  /** Open addressing, key id → slot + 1 (0: empty), at most half full. */
  private table = new Int32Array(128);
  private shift = 32 - 7;
  /** Per aggregate, the state of each slot. */
  readonly states: unknown[][];
  /** Characters of the groups' composite keys (see compositeKey), for the totals of checkpoints. */
  keyChars = 0;
  /** Checkpoints on: the slots changed since the last checkpoint began, as flags and in order. */
  dirty: Uint8Array | null = null;
  dirtyList: number[] = [];
  /** Checkpoints being encoded that hold slots of this window not encoded yet (copy on touch). */
  marks: FreezeMark[] = [];
  /** Micro-batch mode: slots changed in the current batch. */
  batch: Uint8Array | null = null;
  /** Characters of the composite key before the key's own: `s<start>|`. */
  prefixChars = 0;
  /** FNV-1a over `s<start>|` and `n<start>|`: a key group is hashed on from there. */
  private stringPrefix = 0;
  private numberPrefix = 0;

  constructor(
    public start: number,
    public end: number,
    aggregates: number,
  ) {
    this.states = Array.from({ length: aggregates }, () => []);
    this.setBounds(start, end);
  }

  private setBounds(start: number, end: number): void {
    this.start = start;
    this.end = end;
    this.prefixChars = String(start).length + 2;
    this.stringPrefix = fnv(FNV_START, `s${start}|`);
    this.numberPrefix = fnv(FNV_START, `n${start}|`);
  }

  /**
   * Empties a dropped window for reuse as the window [start, end), keeping its arrays at the size
   * they grew to. Each new window would otherwise grow its own, doubling, a few MB a second at
   * E2's rates, most of it in large-object space: old-generation garbage that brings a full
   * collection every few seconds. Nothing may hold the window any more (no checkpoint's marks).
   */
  reuse(start: number, end: number): void {
    this.setBounds(start, end);
    // Slots are written by index from 0 again; the old states are let go of now.
    for (const column of this.states) column.fill(0, 0, this.n);
    this.n = 0;
    this.table.fill(0);
    this.keyChars = 0;
    this.dirty = null;
    this.dirtyList = [];
    this.batch = null;
  }

  /** The key group of key `v`'s group in this window: its composite key's, without building it. */
  keyGroup(v: unknown): number {
    const mask = KEY_GROUPS - 1;
    if (typeof v === 'string') return fnv(this.stringPrefix, v) & mask;
    if (typeof v === 'number') return fnv(this.numberPrefix, String(v)) & mask;
    return keyGroupOf(compositeKey(this.start, v), KEY_GROUPS);
  }

  /** The slot of key id `id`, or −1. */
  find(id: number): number {
    const table = this.table;
    const mask = table.length - 1;
    const keyIds = this.keyIds;
    for (let i = Math.imul(id, 0x9e3779b1) >>> this.shift; ; i = (i + 1) & mask) {
      const s = table[i]!;
      if (s === 0) return -1;
      if (keyIds[s - 1] === id) return s - 1;
    }
  }

  /** Adds key id `id` (absent) in the next slot; the caller pushes its states. */
  insert(id: number): number {
    const slot = this.n++;
    if (slot === this.keyIds.length) {
      const grown = new Int32Array(slot * 2);
      grown.set(this.keyIds);
      this.keyIds = grown;
      if (this.dirty !== null) this.dirty = grownBytes(this.dirty, slot * 2);
      if (this.batch !== null) this.batch = grownBytes(this.batch, slot * 2);
    }
    this.keyIds[slot] = id;
    if (this.n * 2 > this.table.length) this.rehash();
    else this.place(id, slot);
    return slot;
  }

  private place(id: number, slot: number): void {
    const table = this.table;
    const mask = table.length - 1;
    let i = Math.imul(id, 0x9e3779b1) >>> this.shift;
    while (table[i] !== 0) i = (i + 1) & mask;
    table[i] = slot + 1;
  }

  private rehash(): void {
    this.table = new Int32Array(this.table.length * 2);
    this.shift--;
    for (let s = 0; s < this.n; s++) this.place(this.keyIds[s]!, s);
  }

  /** Marks a slot changed since the last checkpoint began. */
  markDirty(slot: number): void {
    let dirty = this.dirty;
    if (dirty === null) {
      dirty = new Uint8Array(this.keyIds.length);
      this.dirty = dirty;
    }
    if (dirty[slot] === 0) {
      dirty[slot] = 1;
      this.dirtyList.push(slot);
    }
  }
}

/** What holds a window for a checkpoint (a TableFreeze): it encodes a held slot before the slot changes. */
export interface SlotEncoder {
  encode(slab: WindowSlab, slot: number): void;
}

/** A checkpoint's hold on a window: its slots still to encode (1), copied first if touched. */
export interface FreezeMark {
  readonly freeze: SlotEncoder;
  readonly bits: Uint8Array;
}

function grownBytes(bytes: Uint8Array, length: number): Uint8Array {
  const grown = new Uint8Array(length);
  grown.set(bytes);
  return grown;
}

export function grownInts(ints: Int32Array, length: number): Int32Array {
  const grown = new Int32Array(length);
  grown.set(ints);
  return grown;
}
