/**
 * Entries a checkpoint encoded and has not handed to the checkpointer yet, as pieces of one key
 * group each (StateFreeze, TableFreeze): a piece under way per key group, and pieces finished.
 */
import { KEY_GROUPS, PIECE_ENTRIES } from './key-groups.js';
import type { EncodedChunk } from './store-contract.js';

/** A piece under way: entries of one key group, encoded and not packed yet. */
export interface OpenPiece {
  readonly count: number;
  /** The piece as the checkpointer packs it. */
  chunk(group: number): EncodedChunk;
}

export class PieceBuffers<P extends OpenPiece> {
  private readonly open: (P | undefined)[] = new Array(KEY_GROUPS);
  /** Pieces finished (by the freeze's own walk), not drained yet. */
  private ready: EncodedChunk[] = [];
  /** Key groups whose open piece reached PIECE_ENTRIES. */
  private full: number[] = [];
  /** Where {@link drainSome} goes on. */
  private restAt = 0;

  constructor(private readonly make: () => P) {}

  /** The open piece of `group`, made if there is none. */
  of(group: number): P {
    let piece = this.open[group];
    if (piece === undefined) {
      piece = this.make();
      this.open[group] = piece;
    }
    return piece;
  }

  /** An entry went into `group`'s open piece: once full, the piece goes at the next drain. */
  added(group: number, piece: P): void {
    if (piece.count === PIECE_ENTRIES) this.full.push(group);
  }

  /** A piece finished elsewhere. */
  push(chunk: EncodedChunk): void {
    this.ready.push(chunk);
  }

  /** The pieces finished or full since the last call, or every piece (`all`). */
  drain(all: boolean): EncodedChunk[] {
    const out = this.ready;
    this.ready = [];
    if (all) for (let g = 0; g < KEY_GROUPS; g++) this.take(g, out);
    else for (const g of this.full) this.take(g, out);
    this.full = [];
    return out;
  }

  /**
   * Once every entry is encoded: what is left, about `maxEntries` entries' worth per call (so
   * packing it is sliced too); none once all is drained.
   */
  drainSome(maxEntries: number): EncodedChunk[] {
    const out = this.ready;
    this.ready = [];
    let taken = 0;
    for (const c of out) taken += c.count;
    while (this.restAt < KEY_GROUPS && taken < maxEntries) taken += this.take(this.restAt++, out);
    return out;
  }

  /** Moves a key group's open piece to `out`; returns its entries. */
  private take(group: number, out: EncodedChunk[]): number {
    const piece = this.open[group];
    if (piece === undefined || piece.count === 0) return 0;
    out.push(piece.chunk(group));
    this.open[group] = undefined;
    return piece.count;
  }
}
