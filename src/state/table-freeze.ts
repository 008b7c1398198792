/**
 * A checkpoint of a GroupTable being encoded: the slots frozen at the epoch's end, walked window by
 * window in the background, with copy on touch; entries come out as `T` pieces of one key group
 * each, and the windows evicted as one watermark (state-files.ts, format 4).
 */
import { KEY_GROUPS } from './key-groups.js';
import { MsgpackWriter } from './msgpack-writer.js';
import { PieceBuffers } from './piece-buffers.js';
import type { EncodedChunk, StateCheckpoint } from './store-contract.js';
import type { WindowSlab } from './window-slab.js';

/** What a freeze needs of its table (a GroupTable). */
export interface FrozenTable {
  /** States per group. */
  readonly aggregates: number;
  /** Per aggregate, a state as checkpoint data, detached from the live state. */
  readonly serializers: readonly ((state: unknown) => unknown)[];
  /** The key value of a key id. */
  keyValue(id: number): unknown;
  /** A freeze encoded its last entry. */
  finished(freeze: TableFreeze): void;
}

/** A window's slots a checkpoint holds: flags of those not encoded yet, and the order to walk them. */
interface Held {
  readonly slab: WindowSlab;
  readonly bits: Uint8Array;
  /** The slots to walk (a changelog's changed ones), or null: 0 to bits.length − 1 (a snapshot). */
  readonly list: readonly number[] | null;
}

/**
 * Groups of one key group encoded and not handed over yet: a `T` piece's columns (see
 * state-files.ts), written as msgpack as the groups come (see MsgpackWriter).
 */
class PieceBuilder {
  count = 0;
  readonly keyColumn = new MsgpackWriter(1024);
  /** Runs `[start, end, count, ...]` of consecutive entries of one window. */
  readonly windows: number[] = [];
  readonly stateColumns: MsgpackWriter[];
  constructor(aggregates: number) {
    this.stateColumns = Array.from({ length: aggregates }, () => new MsgpackWriter(256));
  }
  /** The piece: the msgpack of `[keyColumn, windows, stateColumns]`. */
  chunk(group: number): EncodedChunk {
    let size = this.keyColumn.length + 9 * this.windows.length + 32;
    for (const c of this.stateColumns) size += c.length + 5;
    const out = new MsgpackWriter(size);
    out.arrayHeader(3);
    out.arrayHeader(this.count);
    out.raw(this.keyColumn.written());
    out.arrayHeader(this.windows.length);
    for (const w of this.windows) out.number(w);
    out.arrayHeader(this.stateColumns.length);
    for (const c of this.stateColumns) {
      out.arrayHeader(this.count);
      out.raw(c.written());
    }
    return { group, keys: null, count: this.count, values: out.written() };
  }
}

/** No key is removed one by one: an eviction removes whole windows (see {@link TableFreeze.evictedUpTo}). */
const NO_REMOVALS: readonly (readonly string[])[] = Array.from({ length: KEY_GROUPS }, () => []);

export class TableFreeze implements StateCheckpoint {
  private readonly held: Held[] = [];
  private heldAt = 0;
  private slotAt = 0;
  private done = false;
  private readonly pieces: PieceBuffers<PieceBuilder>;
  readonly removed = NO_REMOVALS;

  /** @internal Made by GroupTable.beginCheckpoint. */
  constructor(
    private readonly table: FrozenTable,
    /** Checkpoints begun before it and it, counting from the table's creation. */
    readonly seq: number,
    /**
     * The watermark the table evicted windows up to (null: none yet): the windows of earlier files
     * that end at or before it are gone. A restore applies it before this file's entries, so a
     * window evicted and started again within the epoch keeps its new groups.
     */
    readonly evictedUpTo: number | null,
    readonly totals: { readonly size: number; readonly keyChars: number },
  ) {
    this.pieces = new PieceBuffers(() => new PieceBuilder(table.aggregates));
  }

  /** @internal Holds a window's slots flagged in `bits` (walked in `list` order, or all). */
  hold(slab: WindowSlab, bits: Uint8Array, list: readonly number[] | null): void {
    this.held.push({ slab, bits, list });
    slab.marks.push({ freeze: this, bits });
  }

  get encoded(): boolean {
    return this.done;
  }

  /** Encodes up to `budget` frozen groups; true once all are. */
  encodeSome(budget: number): boolean {
    if (this.done) return true;
    let n = 0;
    while (this.heldAt < this.held.length) {
      const h = this.held[this.heldAt]!;
      const count = h.list === null ? h.bits.length : h.list.length;
      while (this.slotAt < count) {
        if (n++ === budget) return false;
        const slot = h.list === null ? this.slotAt : h.list[this.slotAt]!;
        this.slotAt++;
        if (h.bits[slot] === 1) {
          h.bits[slot] = 0;
          this.encode(h.slab, slot);
        }
      }
      this.heldAt++;
      this.slotAt = 0;
    }
    this.done = true;
    for (const h of this.held) h.slab.marks = h.slab.marks.filter((m) => m.freeze !== this);
    this.table.finished(this);
    return true;
  }

  /** @internal Encodes a slot's group as it is now (the walk, or a touch before the walk came). */
  encode(slab: WindowSlab, slot: number): void {
    const table = this.table;
    const v = table.keyValue(slab.keyIds[slot]!);
    const group = slab.keyGroup(v);
    const b = this.pieces.of(group);
    const w = b.windows;
    const last = w.length - 3;
    if (last >= 0 && w[last] === slab.start) w[last + 2]!++;
    else w.push(slab.start, slab.end, 1);
    b.keyColumn.value(v);
    const out = table.serializers;
    for (let c = 0; c < out.length; c++) b.stateColumns[c]!.value(out[c]!(slab.states[c]![slot]));
    b.count++;
    this.pieces.added(group, b);
  }

  /** Pieces that reached PIECE_ENTRIES since the last call, or every piece (`all`). */
  drain(all = false): EncodedChunk[] {
    return this.pieces.drain(all);
  }

  /** Once every group is encoded: the rest, about `maxEntries` entries' worth per call. */
  drainSome(maxEntries: number): EncodedChunk[] {
    return this.pieces.drainSome(maxEntries);
  }
}
