/**
 * A checkpoint of a GroupTable being encoded: the slots frozen at the epoch's end, walked window by
 * window in the background, with copy on touch; entries come out as pieces of one key group each,
 * in the format an InMemoryStateStore of groups writes (see GroupTable).
 */
import type { GroupTable, WindowSlab } from './group-table.js';
import { KEY_GROUPS, keyGroupOf, PIECE_ENTRIES } from './key-groups.js';
import type { EncodedChunk, StateCheckpoint } from './state-store.js';
import { compositeKey } from './table-staging.js';

/** A window's slots a checkpoint holds: flags of those not encoded yet, and the order to walk them. */
interface Held {
  readonly slab: WindowSlab;
  readonly bits: Uint8Array;
  /** The slots to walk (a changelog's changed ones), or null: 0 to bits.length − 1 (a snapshot). */
  readonly list: readonly number[] | null;
}

/** Groups of one key group encoded and not packed yet, as groupCodec's chunk columns. */
class PieceBuilder {
  readonly keys: string[] = [];
  readonly keyColumn: unknown[] = [];
  readonly starts: number[] = [];
  readonly ends: number[] = [];
  readonly stateColumns: unknown[][];
  constructor(aggregates: number) {
    this.stateColumns = Array.from({ length: aggregates }, () => []);
  }
  chunk(group: number): EncodedChunk {
    return {
      group,
      keys: this.keys,
      values: [[this.keyColumn], this.starts, this.ends, this.stateColumns],
    };
  }
}

export class TableFreeze implements StateCheckpoint {
  private readonly held: Held[] = [];
  private heldAt = 0;
  private slotAt = 0;
  /** Evicted windows whose groups become removals, and where their walk is. */
  private evictedAt = 0;
  private evictedSlot = 0;
  private done = false;
  private readonly building: (PieceBuilder | undefined)[] = new Array(KEY_GROUPS);
  private ready: EncodedChunk[] = [];
  private full: number[] = [];
  private restAt = 0;
  /**
   * Starts of the evicted windows, and the keys of them encoded as entries: a window evicted and
   * started again within the epoch (a row the late-row filter let through) has its new groups
   * written, so they are no removals — a file's entries and removals are disjoint.
   */
  private readonly evictedStarts: Set<number>;
  private readonly written = new Set<string>();

  /** @internal Made by {@link GroupTable.beginCheckpoint}. */
  constructor(
    private readonly table: GroupTable,
    /** Checkpoints begun before it and it, counting from the table's creation. */
    readonly seq: number,
    private readonly evicted: readonly WindowSlab[],
    /** Per key group, the keys removed since the previous checkpoint began (filled as evicted windows are walked). */
    readonly removed: string[][],
    readonly totals: { readonly size: number; readonly keyChars: number },
  ) {
    this.evictedStarts = new Set(evicted.map((slab) => slab.start));
  }

  /** @internal Holds a window's slots flagged in `bits` (walked in `list` order, or all). */
  hold(slab: WindowSlab, bits: Uint8Array, list: readonly number[] | null): void {
    this.held.push({ slab, bits, list });
    slab.marks.push({ freeze: this, bits });
  }

  get encoded(): boolean {
    return this.done;
  }

  /** Encodes up to `budget` frozen groups (then the removals); true once all are. */
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
    while (this.evictedAt < this.evicted.length) {
      const slab = this.evicted[this.evictedAt]!;
      while (this.evictedSlot < slab.n) {
        if (n++ === budget) return false;
        const key = compositeKey(slab.start, this.table.keyValue(slab.keyIds[this.evictedSlot++]!));
        if (!this.written.has(key)) this.removed[keyGroupOf(key, KEY_GROUPS)]!.push(key);
      }
      this.evictedAt++;
      this.evictedSlot = 0;
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
    const key = compositeKey(slab.start, v);
    const group = keyGroupOf(key, KEY_GROUPS);
    let b = this.building[group];
    if (b === undefined) {
      b = new PieceBuilder(table.aggregates);
      this.building[group] = b;
    }
    if (this.evictedStarts.size !== 0 && this.evictedStarts.has(slab.start)) this.written.add(key);
    b.keys.push(key);
    b.keyColumn.push(v);
    b.starts.push(slab.start);
    b.ends.push(slab.end);
    const out = table.serializers;
    for (let c = 0; c < out.length; c++) b.stateColumns[c]!.push(out[c]!(slab.states[c]![slot]));
    if (b.keys.length === PIECE_ENTRIES) this.full.push(group);
  }

  /** Pieces that reached PIECE_ENTRIES since the last call, or every piece (`all`). */
  drain(all = false): EncodedChunk[] {
    const out = this.ready;
    this.ready = [];
    if (all) for (let g = 0; g < KEY_GROUPS; g++) this.take(g, out);
    else for (const g of this.full) this.take(g, out);
    this.full = [];
    return out;
  }

  /** Once every group is encoded: the rest, about `maxEntries` entries' worth per call. */
  drainSome(maxEntries: number): EncodedChunk[] {
    const out = this.ready;
    this.ready = [];
    let taken = 0;
    for (const c of out) taken += c.keys.length;
    while (this.restAt < KEY_GROUPS && taken < maxEntries) taken += this.take(this.restAt++, out);
    return out;
  }

  private take(group: number, out: EncodedChunk[]): number {
    const b = this.building[group];
    if (b === undefined || b.keys.length === 0) return 0;
    out.push(b.chunk(group));
    this.building[group] = undefined;
    return b.keys.length;
  }
}
