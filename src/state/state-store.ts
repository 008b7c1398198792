/**
 * State of one stateful operator in one partition. The engine's operators keep everything they
 * remember across rows here, so the store is the unit of checkpointing: it records which keys were
 * written or removed since the last checkpoint (its changelog), and can be replaced by a
 * disk-backed implementation of the same interface.
 */
export interface StateStore<V> {
  get(key: string): V | undefined;
  /** Sets a key's value (also to mark an in-place update of the same object as changed). */
  put(key: string, value: V): void;
  remove(key: string): void;
  readonly size: number;
  entries(): IterableIterator<[string, V]>;
  /** Counters since the store was created. */
  metrics(): StateStoreMetrics;
  /**
   * What changed since the last call: values of the keys written (last value wins) and the keys
   * removed. A checkpoint writes exactly this (changelog checkpointing).
   */
  takeChanges(): StateChanges<V>;
}

export interface StateStoreMetrics {
  numRowsTotal: number;
  /** Keys written since the store was created. */
  numRowsUpdated: number;
  /** Keys removed since the store was created. */
  numRowsRemoved: number;
  memoryUsedBytes: number;
}

export interface StateChanges<V> {
  readonly written: Map<string, V>;
  readonly removed: Set<string>;
}

/**
 * The in-memory store: a hash map per (operator, partition), plus the set of keys touched since the
 * last checkpoint. Memory use is an estimate: key characters plus a per-entry size the operator
 * gives for its values.
 */
export class InMemoryStateStore<V> implements StateStore<V> {
  private readonly map = new Map<string, V>();
  private written = new Map<string, V>();
  private removed = new Set<string>();
  private updates = 0;
  private removals = 0;
  private keyChars = 0;

  /** @param bytesPerValue an estimate of one value's size, for memoryUsedBytes. */
  constructor(private readonly bytesPerValue = 64) {}

  get(key: string): V | undefined {
    return this.map.get(key);
  }

  put(key: string, value: V): void {
    if (!this.map.has(key)) this.keyChars += key.length;
    this.map.set(key, value);
    this.written.set(key, value);
    this.removed.delete(key);
    this.updates++;
  }

  remove(key: string): void {
    if (!this.map.delete(key)) return;
    this.keyChars -= key.length;
    this.written.delete(key);
    this.removed.add(key);
    this.removals++;
  }

  get size(): number {
    return this.map.size;
  }

  entries(): IterableIterator<[string, V]> {
    return this.map.entries();
  }

  metrics(): StateStoreMetrics {
    return {
      numRowsTotal: this.map.size,
      numRowsUpdated: this.updates,
      numRowsRemoved: this.removals,
      // Map entry overhead (≈ 40 B) + key characters (2 B each) + the value.
      memoryUsedBytes: this.map.size * (40 + this.bytesPerValue) + this.keyChars * 2,
    };
  }

  takeChanges(): StateChanges<V> {
    const changes = { written: this.written, removed: this.removed };
    this.written = new Map();
    this.removed = new Set();
    return changes;
  }
}
