import type { ListState, MapState, StateDeclaration, ValueState } from '../api/stateful-processor.js';
import type { InMemoryStateStore, StateCodec } from '../state/state-store.js';
import type { TimeIndex } from '../state/time-index.js';

/**
 * The state of `transformWithState`, kept in one store per (operator, partition) so it is
 * checkpointed and restored like every operator's. One store entry per (state variable, key):
 * `<name>\0<key>`; a key's timers under `#timers\0<key>` ('#' cannot start a state name).
 *
 * Values carry their expiry (processing time, ms; 0 without a TTL): a value whose expiry has
 * passed reads as absent, and is removed when read or when its expiry comes due in the index.
 */
export type ValueEntry = { v: unknown; e: number };
export type ListEntry = { l: unknown[]; e: number[] | null };
/** By the map key's text: [map key, value, expiry]. */
export type MapEntry = { m: Map<string, [unknown, unknown, number]> };
export type TimerEntry = { k: unknown; t: number[] };
export type StateEntry = ValueEntry | ListEntry | MapEntry | TimerEntry;

export const TIMERS = '#timers';

/** A key as text, for store keys: type-tagged, so 1 and '1' differ. */
export function keyText(key: unknown): string {
  if (typeof key === 'string') return `s${key}`;
  if (typeof key === 'number') return `n${key}`;
  return `j${JSON.stringify(key) ?? ''}`;
}

/** The key text of a store key (what follows the first NUL). */
export function keyTextOf(storeKey: string): string {
  return storeKey.slice(storeKey.indexOf('\u0000') + 1);
}

/** Checkpoint form: maps as arrays of their records; everything deep-copied (values may be mutated). */
export const entryCodec: StateCodec<StateEntry> = {
  encode: (x) => ('m' in x ? { m: structuredClone([...x.m.values()]) } : structuredClone(x)),
  decode: (d) => {
    const x = d as StateEntry | { m: [unknown, unknown, number][] };
    if ('m' in x && Array.isArray(x.m)) return { m: new Map(x.m.map((r) => [keyText(r[0]), r])) };
    return x as StateEntry;
  },
};

/**
 * What state variables share: the store, the key being processed, the clock and the TTL index.
 *
 * The index holds at most one sweep per store entry, at or before its earliest expiry: a write
 * that extends a TTL adds nothing (the sweep then finds the entry alive and comes back at its new
 * earliest expiry), so a key written on every row costs one index entry, not one per write.
 */
export class StateScope {
  /** Text of the key being processed. */
  key = '';
  /** Store entries with a sweep in the index, and its time. */
  private readonly scheduled = new Map<string, number>();

  constructor(
    readonly store: InMemoryStateStore<StateEntry>,
    /** Sweeps of entries with a TTL: store keys by time. */
    readonly expiries: TimeIndex,
    readonly now: () => number,
  ) {}

  /** The expiry of a value written now with `ttlMs` (0: none); the entry's sweep is scheduled. */
  expiryFor(ttlMs: number | null, storeKey: string): number {
    if (ttlMs === null) return 0;
    const e = this.now() + ttlMs;
    this.schedule(storeKey, e);
    return e;
  }

  /** Makes sure `storeKey` is swept at or before `time`. */
  schedule(storeKey: string, time: number): void {
    const at = this.scheduled.get(storeKey);
    if (at !== undefined && at <= time) return;
    this.scheduled.set(storeKey, time);
    this.expiries.add(time, storeKey);
  }

  /**
   * A sweep came due: removes what expired at or before `now` from the entry, and schedules the
   * next sweep at the earliest expiry left.
   */
  sweep(storeKey: string, time: number, now: number): void {
    if (this.scheduled.get(storeKey) !== time) return; // superseded by an earlier sweep
    this.scheduled.delete(storeKey);
    const x = this.store.get(storeKey);
    if (x === undefined) return;
    let next = Number.POSITIVE_INFINITY;
    if ('v' in x) {
      if (x.e !== 0 && x.e <= now) this.store.remove(storeKey);
      else if (x.e !== 0) next = x.e;
    } else if ('l' in x) {
      liveList(this.store, storeKey, x, now);
      const left = this.store.get(storeKey) as ListEntry | undefined;
      if (left?.e) for (const e of left.e) next = Math.min(next, e);
    } else if ('m' in x) {
      const left = liveMap(this.store, storeKey, x, now);
      if (left) for (const r of left.m.values()) if (r[2] !== 0) next = Math.min(next, r[2]);
    }
    if (next !== Number.POSITIVE_INFINITY) this.schedule(storeKey, next);
  }

  /** After a restore: one sweep per entry with a TTL, at its earliest expiry. */
  scheduleAll(): void {
    for (const [k, x] of this.store.entries()) {
      let first = Number.POSITIVE_INFINITY;
      if ('v' in x) {
        if (x.e !== 0) first = x.e;
      } else if ('l' in x) {
        if (x.e !== null) for (const e of x.e) first = Math.min(first, e);
      } else if ('m' in x) {
        for (const r of x.m.values()) if (r[2] !== 0) first = Math.min(first, r[2]);
      }
      if (first !== Number.POSITIVE_INFINITY) this.schedule(k, first);
    }
  }
}

const expired = (e: number, now: number) => e !== 0 && e <= now;

/** Drops a list's expired values (rewriting or removing the entry); returns what is left. */
function liveList(
  store: InMemoryStateStore<StateEntry>,
  storeKey: string,
  x: ListEntry,
  now: number,
): unknown[] {
  const e = x.e;
  if (e === null || !e.some((t) => expired(t, now))) return x.l;
  const l: unknown[] = [];
  const kept: number[] = [];
  for (let i = 0; i < x.l.length; i++) {
    if (expired(e[i]!, now)) continue;
    l.push(x.l[i]);
    kept.push(e[i]!);
  }
  if (l.length === 0) store.remove(storeKey);
  else store.put(storeKey, { l, e: kept });
  return l;
}

/** Drops a map's expired records; returns the entry, or undefined when nothing is left. */
function liveMap(
  store: InMemoryStateStore<StateEntry>,
  storeKey: string,
  x: MapEntry,
  now: number,
): MapEntry | undefined {
  let changed = false;
  for (const [k, r] of x.m) {
    if (expired(r[2], now)) {
      x.m.delete(k);
      changed = true;
    }
  }
  if (x.m.size === 0) {
    store.remove(storeKey);
    return undefined;
  }
  if (changed) store.put(storeKey, x);
  return x;
}

abstract class StateVariable {
  /** The store key of the current key, made once per key: reading it again reuses its hash. */
  private cachedFor = '';
  private cached = '';

  constructor(
    protected readonly scope: StateScope,
    protected readonly decl: StateDeclaration,
  ) {}

  protected storeKey(): string {
    if (this.scope.key !== this.cachedFor || this.cached === '') {
      this.cachedFor = this.scope.key;
      this.cached = `${this.decl.name}\u0000${this.scope.key}`;
    }
    return this.cached;
  }

  clear(): void {
    this.scope.store.remove(this.storeKey());
  }
}

export class ValueStateImpl<T> extends StateVariable implements ValueState<T> {
  get(): T | undefined {
    const k = this.storeKey();
    const x = this.scope.store.get(k) as ValueEntry | undefined;
    if (x === undefined) return undefined;
    if (expired(x.e, this.scope.now())) {
      this.scope.store.remove(k);
      return undefined;
    }
    return x.v as T;
  }

  update(value: T): void {
    if (value === undefined || value === null)
      throw new TypeError(
        `valueState '${this.decl.name}'.update(): the value must not be ${value}; use clear()`,
      );
    const k = this.storeKey();
    this.scope.store.put(k, { v: value, e: this.scope.expiryFor(this.decl.ttlMs, k) });
  }

  exists(): boolean {
    return this.get() !== undefined;
  }
}

export class ListStateImpl<T> extends StateVariable implements ListState<T> {
  private live(): unknown[] {
    const k = this.storeKey();
    const x = this.scope.store.get(k) as ListEntry | undefined;
    return x === undefined ? [] : liveList(this.scope.store, k, x, this.scope.now());
  }

  get(): Iterable<T> {
    return this.live().slice() as T[];
  }

  put(values: readonly T[]): void {
    checkList(this.decl.name, 'put', values);
    if (values.length === 0) {
      this.clear();
      return;
    }
    const k = this.storeKey();
    const e = this.scope.expiryFor(this.decl.ttlMs, k);
    this.scope.store.put(k, { l: [...values], e: this.decl.ttlMs === null ? null : values.map(() => e) });
  }

  appendValue(value: T): void {
    this.appendList([value]);
  }

  appendList(values: readonly T[]): void {
    checkList(this.decl.name, 'appendList', values);
    if (values.length === 0) return;
    const k = this.storeKey();
    this.live(); // expired values go first
    // Read through the store before the entry changes in place (checkpoints copy on touch).
    const x = (this.scope.store.get(k) as ListEntry | undefined) ?? {
      l: [],
      e: this.decl.ttlMs === null ? null : [],
    };
    const e = this.scope.expiryFor(this.decl.ttlMs, k);
    for (const v of values) {
      x.l.push(v);
      x.e?.push(e);
    }
    this.scope.store.put(k, x);
  }

  exists(): boolean {
    return this.live().length > 0;
  }
}

function checkList(name: string, method: string, values: unknown): void {
  if (!Array.isArray(values)) throw new TypeError(`listState '${name}'.${method}(): pass an array`);
  if (values.some((v) => v === undefined || v === null))
    throw new TypeError(`listState '${name}'.${method}(): values must not be null or undefined`);
}

export class MapStateImpl<K, V> extends StateVariable implements MapState<K, V> {
  private live(): MapEntry | undefined {
    const k = this.storeKey();
    const x = this.scope.store.get(k) as MapEntry | undefined;
    return x === undefined ? undefined : liveMap(this.scope.store, k, x, this.scope.now());
  }

  getValue(key: K): V | undefined {
    return this.live()?.m.get(keyText(key))?.[1] as V | undefined;
  }

  containsKey(key: K): boolean {
    return this.live()?.m.has(keyText(key)) ?? false;
  }

  updateValue(key: K, value: V): void {
    if (value === undefined || value === null)
      throw new TypeError(
        `mapState '${this.decl.name}'.updateValue(): the value must not be ${value}; use removeKey()`,
      );
    const k = this.storeKey();
    const x = this.live() ?? { m: new Map() };
    x.m.set(keyText(key), [key, value, this.scope.expiryFor(this.decl.ttlMs, k)]);
    this.scope.store.put(k, x);
  }

  removeKey(key: K): void {
    const x = this.live();
    if (x === undefined || !x.m.delete(keyText(key))) return;
    if (x.m.size === 0) this.clear();
    else this.scope.store.put(this.storeKey(), x);
  }

  keys(): Iterable<K> {
    return [...(this.live()?.m.values() ?? [])].map((r) => r[0] as K);
  }

  values(): Iterable<V> {
    return [...(this.live()?.m.values() ?? [])].map((r) => r[1] as V);
  }

  iterator(): Iterable<[K, V]> {
    return [...(this.live()?.m.values() ?? [])].map((r) => [r[0] as K, r[1] as V]);
  }

  exists(): boolean {
    return this.live() !== undefined;
  }
}
