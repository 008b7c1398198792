import type { PackedForm, PackedStore } from '../state/packed-store.js';
import type { TimeIndex } from '../state/time-index.js';

/**
 * The state of `transformWithState`, kept in one store per (operator, partition) so it is
 * checkpointed and restored like every operator's. One store entry per grouping key, under the
 * key's text (`keyText`): the values of its state variables, in the order the processor declares
 * them, and its timers. Entries are kept packed ({@link PackedStore}, {@link keyEntryForm}): a row
 * unpacks its key's entry once and packs it back once, if it changed.
 *
 * Values carry their expiry (processing time, ms; 0 without a TTL): a value whose expiry has
 * passed reads as absent, and is removed when read or when its key's sweep comes due. Each key has
 * at most one sweep in the TTL index, at or before its earliest expiry (`w`): a write that extends
 * a TTL adds nothing — the sweep then finds the values alive and comes back at the new earliest
 * expiry — so a key written on every row costs one index entry, not one per write.
 */
export type ValueEntry = { v: unknown; e: number };
export type ListEntry = { l: unknown[]; e: number[] | null };
/** By the map key's text: [map key, value, expiry]. */
export type MapEntry = { m: Map<string, [unknown, unknown, number]> };
export type VariableEntry = ValueEntry | ListEntry | MapEntry;

export interface KeyEntry {
  /** The grouping key (undefined for a key restored from an older checkpoint until it is seen). */
  k: unknown;
  /** Each state variable's value, in declaration order; null when absent. */
  s: (VariableEntry | null)[];
  /** Timers, ascending; {@link NO_TIMERS} when none. */
  t: number[];
  /**
   * The time of the key's sweep in the TTL index; 0 when it has none; −1 for a key restored from a
   * checkpoint (which does not keep this) and not written since: its sweep is at its earliest
   * expiry (see {@link StateScope.restored}). Not checkpointed.
   */
  w: number;
}

/** The timers of a key without any: one shared empty array, replaced (never changed) by a timer. */
export const NO_TIMERS: number[] = Object.freeze([]) as unknown as number[];

/** A key as text, for store keys: type-tagged, so 1 and '1' differ. */
export function keyText(key: unknown): string {
  if (typeof key === 'string') return `s${key}`;
  if (typeof key === 'number') return `n${key}`;
  return `j${JSON.stringify(key) ?? ''}`;
}

/** A variable's plain data: its checkpoint form, sharing the values (packed at once). */
function plainVariable(x: VariableEntry | null): unknown {
  if (x === null) return null;
  return 'm' in x ? { m: [...x.m.values()] } : x;
}

function decodeVariable(d: unknown): VariableEntry | null {
  if (d === null || d === undefined) return null;
  const x = d as VariableEntry | { m: [unknown, unknown, number][] };
  if ('m' in x && Array.isArray(x.m)) return { m: new Map(x.m.map((r) => [keyText(r[0]), r])) };
  return x as VariableEntry;
}

/**
 * Checkpoint form: `{ k, s, t }` with maps as arrays of their records. Checkpoints written before
 * one entry per key held an entry per state variable and key (`<name>\0<key text>`: a value, list
 * or map) and one for the key's timers (`#timers\0<key text>`: `{ k, t }`); those read as they
 * were and {@link migrateLegacyEntries} moves them into their keys' entries after a restore.
 */
function keyEntryOf(d: unknown): KeyEntry {
  const x = d as { k: unknown; s?: unknown[]; t?: number[]; w?: number };
  if (Array.isArray(x.s)) {
    const t = x.t !== undefined && x.t.length > 0 ? x.t : NO_TIMERS;
    // `d` was just unpacked and is the entry's own: its variables are decoded in place.
    const s = x.s as (VariableEntry | null)[];
    for (let i = 0; i < s.length; i++) s[i] = decodeVariable(s[i]);
    return { k: x.k, s, t, w: x.w ?? -1 };
  }
  if ('t' in x && 'k' in x) return x as unknown as KeyEntry; // a legacy timers entry
  return decodeVariable(d) as unknown as KeyEntry; // a legacy state variable entry
}

/**
 * How entries are packed: their checkpoint form (see {@link keyEntryOf}) plus the time of the
 * key's sweep (`w`, not checkpointed). Entries restored from a checkpoint are packed as the
 * checkpoint holds them: entries of the layout before one entry per key unpack as they were, for
 * {@link migrateLegacyEntries}.
 */
export const keyEntryForm: PackedForm<KeyEntry> = {
  pack: (x) => ({ k: x.k, s: x.s.map(plainVariable), t: x.t, w: x.w }),
  unpack: keyEntryOf,
  toCheckpoint: (d) => {
    const x = d as { k: unknown; s?: unknown[]; t: number[] };
    return Array.isArray(x.s) ? { k: x.k, s: x.s, t: x.t } : d;
  },
  fromCheckpoint: (d) => d,
};

/** Store key prefix of the timers of a key in checkpoints written before one entry per key. */
const LEGACY_TIMERS = '#timers';

/**
 * Moves the entries of a checkpoint written before one entry per key (see {@link keyEntryOf})
 * into one entry per key; the next checkpoint writes the change. Returns how many it moved.
 */
export function migrateLegacyEntries(store: PackedStore<KeyEntry>, names: readonly string[]): number {
  const legacy: [string, unknown][] = [];
  for (const [k, x] of store.entries()) if (k.includes('\u0000')) legacy.push([k, x]);
  for (const [storeKey, x] of legacy) {
    store.remove(storeKey);
    const nul = storeKey.indexOf('\u0000');
    const name = storeKey.slice(0, nul);
    const text = storeKey.slice(nul + 1);
    const entry = store.get(text) ?? { k: undefined, s: names.map(() => null), t: NO_TIMERS, w: -1 };
    if (name === LEGACY_TIMERS) {
      const timers = x as { k: unknown; t: number[] };
      entry.k = timers.k;
      if (timers.t.length > 0) entry.t = timers.t;
    } else {
      const i = names.indexOf(name);
      if (i < 0) continue; // a state the processor no longer declares (refused on restart anyway)
      entry.s[i] = x as VariableEntry;
    }
    store.put(text, entry);
  }
  return legacy.length;
}

/** Whether a value with expiry `e` (0: none) has expired by `now`. */
export const expired = (e: number, now: number): boolean => e !== 0 && e <= now;

/** The earliest expiry a variable's value holds (Infinity: none). */
function earliestExpiry(x: VariableEntry): number {
  let first = Number.POSITIVE_INFINITY;
  if ('v' in x) {
    if (x.e !== 0) first = x.e;
  } else if ('l' in x) {
    if (x.e !== null) for (const e of x.e) if (e < first) first = e;
  } else {
    for (const r of x.m.values()) if (r[2] !== 0 && r[2] < first) first = r[2];
  }
  return first;
}

/** A variable's value without what expired by `now`: the same object, a smaller one, or null. */
export function liveVariable(x: VariableEntry, now: number): VariableEntry | null {
  if ('v' in x) return expired(x.e, now) ? null : x;
  if ('l' in x) {
    const e = x.e;
    if (e === null || !e.some((t) => expired(t, now))) return x;
    const l: unknown[] = [];
    const kept: number[] = [];
    for (let i = 0; i < x.l.length; i++) {
      if (expired(e[i]!, now)) continue;
      l.push(x.l[i]);
      kept.push(e[i]!);
    }
    return l.length === 0 ? null : { l, e: kept };
  }
  for (const [k, r] of x.m) if (expired(r[2], now)) x.m.delete(k);
  return x.m.size === 0 ? null : x;
}

/** The earliest expiry of the key's values (Infinity: none has a TTL). */
function firstExpiry(x: KeyEntry): number {
  let first = Number.POSITIVE_INFINITY;
  for (let i = 0; i < x.s.length; i++) {
    const v = x.s[i]!;
    if (v !== null) first = Math.min(first, earliestExpiry(v));
  }
  return first;
}

/** When the key's sweep is due: its recorded time, or for a restored key its earliest expiry (0: none). */
function sweepTime(x: KeyEntry): number {
  if (x.w >= 0) return x.w;
  const first = firstExpiry(x);
  return first === Number.POSITIVE_INFINITY ? 0 : first;
}

/** A key's entry with no value and no timer left: it is removed. */
function holdsNothing(x: KeyEntry): boolean {
  if (x.t.length !== 0) return false;
  for (let i = 0; i < x.s.length; i++) if (x.s[i] !== null) return false;
  return true;
}

/** Values of state variables and keys with timers: what `numRowsTotal` reports. */
function stateRowsOf(x: KeyEntry): number {
  let n = x.t.length > 0 ? 1 : 0;
  for (const v of x.s) if (v !== null) n++;
  return n;
}

/**
 * The key being processed and what its handlers share: the store, the key's entry, the processing
 * time of the row or timer, and the TTL index. The operator begins a key before it calls the
 * processor and ends it after; state variables and timers read and change the key's entry.
 */
export class StateScope {
  /** The key being processed, and its text (its store key). */
  key: unknown = undefined;
  text = '';
  /** The key's entry, or null while it has none. */
  entry: KeyEntry | null = null;
  /** Processing time of the row or timer being handled. */
  time = 0;
  /** Values of state variables held, plus keys with timers (numRowsTotal). */
  rows = 0;
  /** {@link rows} when the key was begun: what stays if its entry cannot be written back. */
  private rowsBefore = 0;
  private dirty = false;

  constructor(
    readonly store: PackedStore<KeyEntry>,
    /** Sweeps of keys with a TTL: key texts by time. */
    readonly expiries: TimeIndex,
    private readonly variables: number,
  ) {}

  /** Begins key `text`, with its entry when the caller has just read it (`read`). */
  begin(key: unknown, text: string, time: number, read?: KeyEntry): void {
    this.key = key;
    this.text = text;
    this.time = time;
    this.dirty = false;
    this.rowsBefore = this.rows;
    const x = read ?? this.store.get(text) ?? null;
    // A restored key's sweep is at its earliest expiry (see restored()); packed back with the key
    // if the handler changes it.
    if (x !== null && x.w < 0) x.w = sweepTime(x);
    if (x !== null && x.k === undefined) {
      x.k = key;
      this.dirty = true;
    }
    this.entry = x;
  }

  /**
   * Writes the key's entry back if it changed; an entry left empty is removed. Throws when the
   * entry cannot be packed (a value msgpack cannot hold): then nothing of the handler's changes
   * is kept, and the key holds what it held when it was begun.
   */
  end(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const x = this.entry;
    if (x === null) return;
    try {
      if (holdsNothing(x)) {
        this.store.remove(this.text);
        this.entry = null;
      } else {
        this.store.put(this.text, x);
      }
    } catch (e) {
      this.rows = this.rowsBefore;
      throw e;
    }
  }

  /** The value of variable `i` of the key (null: none). */
  variable(i: number): VariableEntry | null {
    return this.entry === null ? null : this.entry.s[i]!;
  }

  /** Sets variable `i` of the key (null: clears it). */
  setVariable(i: number, value: VariableEntry | null): void {
    const x = this.writable();
    const had = x.s[i] !== null;
    x.s[i] = value;
    this.rows += (value !== null ? 1 : 0) - (had ? 1 : 0);
  }

  /** The key's entry (its unpacked copy) changed in place: {@link end} packs it back. */
  changed(): void {
    this.dirty = true;
  }

  /** The key's entry, created if it has none, about to change. */
  writable(): KeyEntry {
    this.dirty = true;
    if (this.entry === null) {
      this.entry = {
        k: this.key,
        s: new Array<VariableEntry | null>(this.variables).fill(null),
        t: NO_TIMERS,
        w: 0,
      };
    }
    return this.entry;
  }

  /** The key's timers changed from none to some (+1) or back (−1). */
  timersHeld(delta: number): void {
    this.rows += delta;
  }

  /** The expiry of a value written now with `ttlMs` (0: none); the key's sweep comes by then. */
  expiryFor(ttlMs: number | null): number {
    if (ttlMs === null) return 0;
    const e = this.time + ttlMs;
    this.scheduleSweep(this.writable(), this.text, e);
    return e;
  }

  private scheduleSweep(x: KeyEntry, text: string, time: number): void {
    if (x.w > 0 && x.w <= time) return;
    x.w = time;
    this.expiries.add(time, text);
  }

  /**
   * The sweep of key `text` due at `time` came: removes what expired by `now`, and schedules the
   * next sweep at the earliest expiry left. Not while a key is being processed.
   */
  sweep(text: string, time: number, now: number): void {
    const x = this.store.get(text);
    if (x === undefined || sweepTime(x) !== time) return; // gone, or superseded by an earlier sweep
    x.w = 0;
    let next = Number.POSITIVE_INFINITY;
    for (let i = 0; i < x.s.length; i++) {
      const v = x.s[i]!;
      if (v === null) continue;
      const live = liveVariable(v, now);
      x.s[i] = live;
      if (live === null) this.rows--;
      else next = Math.min(next, earliestExpiry(live));
    }
    if (next !== Number.POSITIVE_INFINITY) this.scheduleSweep(x, text, next);
    // Written back even when every value is alive: the time of its sweep changed.
    if (holdsNothing(x)) this.store.remove(text);
    else this.store.put(text, x);
  }

  /**
   * After a restore: counts the state rows, and schedules one sweep per key with a TTL, at its
   * earliest expiry. The entries are not written back: their sweep time stays −1, which reads as
   * that earliest expiry ({@link sweepTime}). Returns the keys' timers, for the timer index.
   */
  restored(): { times: number[]; texts: string[] } {
    const times: number[] = [];
    const texts: string[] = [];
    this.rows = 0;
    for (const [text, x] of this.store.entries()) {
      this.rows += stateRowsOf(x);
      const first = firstExpiry(x);
      if (first !== Number.POSITIVE_INFINITY) this.expiries.add(first, text);
      for (const t of x.t) {
        times.push(t);
        texts.push(text);
      }
    }
    return { times, texts };
  }
}
