import { invalidArgument } from '../errors.js';
import type { ListState, MapState, StateDeclaration, ValueState } from '../plan/stateful-processor.js';
import {
  expired,
  keyText,
  type ListEntry,
  liveVariable,
  type MapEntry,
  type StateScope,
  type ValueEntry,
} from './processor-state.js';

/**
 * The state variables a processor's handle makes (`valueState`, `listState`, `mapState`): views of
 * one slot of the entry of the key being processed (see StateScope), the slot of the variable's
 * place among the processor's declarations.
 */
abstract class StateVariable {
  constructor(
    protected readonly scope: StateScope,
    protected readonly decl: StateDeclaration,
    /** The variable's place in the processor's declarations, and in every key's entry. */
    protected readonly index: number,
  ) {}

  clear(): void {
    if (this.scope.variable(this.index) !== null) this.scope.setVariable(this.index, null);
  }
}

export class ValueStateImpl<T> extends StateVariable implements ValueState<T> {
  get(): T | undefined {
    const x = this.scope.variable(this.index) as ValueEntry | null;
    if (x === null) return undefined;
    if (expired(x.e, this.scope.time)) {
      this.scope.setVariable(this.index, null);
      return undefined;
    }
    return x.v as T;
  }

  update(value: T): void {
    if (value === undefined || value === null)
      throw invalidArgument(
        `valueState '${this.decl.name}'.update(): the value must not be ${value}; use clear()`,
      );
    const e = this.scope.expiryFor(this.decl.ttlMs);
    const x = this.scope.variable(this.index) as ValueEntry | null;
    if (x === null) {
      this.scope.setVariable(this.index, { v: value, e });
      return;
    }
    // In the key's unpacked entry (see StateScope.changed), packed back when the handler ends.
    x.v = value;
    x.e = e;
    this.scope.changed();
  }

  exists(): boolean {
    return this.get() !== undefined;
  }
}

export class ListStateImpl<T> extends StateVariable implements ListState<T> {
  /** The list's live entry (expired values dropped first), or null. */
  private live(): ListEntry | null {
    const x = this.scope.variable(this.index) as ListEntry | null;
    if (x === null) return null;
    const live = liveVariable(x, this.scope.time) as ListEntry | null;
    if (live !== x) this.scope.setVariable(this.index, live);
    return live;
  }

  get(): Iterable<T> {
    return (this.live()?.l.slice() ?? []) as T[];
  }

  put(values: readonly T[]): void {
    checkList(this.decl.name, 'put', values);
    if (values.length === 0) {
      this.clear();
      return;
    }
    const e = this.scope.expiryFor(this.decl.ttlMs);
    const x = this.live();
    // A TTL set or dropped since the entry was written (a restart) needs new arrays.
    if (x === null || (x.e === null) !== (this.decl.ttlMs === null)) {
      this.scope.setVariable(this.index, {
        l: [...values],
        e: this.decl.ttlMs === null ? null : values.map(() => e),
      });
      return;
    }
    // The entry's arrays are reused (see StateScope.changed); the values are copied.
    x.l.length = values.length;
    for (let i = 0; i < values.length; i++) x.l[i] = values[i];
    if (x.e !== null) {
      x.e.length = values.length;
      x.e.fill(e);
    }
    this.scope.changed();
  }

  appendValue(value: T): void {
    this.appendList([value]);
  }

  appendList(values: readonly T[]): void {
    checkList(this.decl.name, 'appendList', values);
    if (values.length === 0) return;
    const x = this.live() ?? { l: [], e: this.decl.ttlMs === null ? null : [] };
    const e = this.scope.expiryFor(this.decl.ttlMs);
    for (const v of values) {
      x.l.push(v);
      x.e?.push(e);
    }
    this.scope.setVariable(this.index, x);
  }

  exists(): boolean {
    return this.live() !== null;
  }
}

function checkList(name: string, method: string, values: unknown): void {
  if (!Array.isArray(values)) throw invalidArgument(`listState '${name}'.${method}(): pass an array`);
  if (values.some((v) => v === undefined || v === null))
    throw invalidArgument(`listState '${name}'.${method}(): values must not be null or undefined`);
}

export class MapStateImpl<K, V> extends StateVariable implements MapState<K, V> {
  private live(): MapEntry | null {
    const x = this.scope.variable(this.index) as MapEntry | null;
    if (x === null) return null;
    const size = x.m.size;
    const live = liveVariable(x, this.scope.time) as MapEntry | null;
    if (live === null || live.m.size !== size) this.scope.setVariable(this.index, live);
    return live;
  }

  getValue(key: K): V | undefined {
    return this.live()?.m.get(keyText(key))?.[1] as V | undefined;
  }

  containsKey(key: K): boolean {
    return this.live()?.m.has(keyText(key)) ?? false;
  }

  updateValue(key: K, value: V): void {
    if (value === undefined || value === null)
      throw invalidArgument(
        `mapState '${this.decl.name}'.updateValue(): the value must not be ${value}; use removeKey()`,
      );
    const x = this.live() ?? { m: new Map() };
    x.m.set(keyText(key), [key, value, this.scope.expiryFor(this.decl.ttlMs)]);
    this.scope.setVariable(this.index, x);
  }

  removeKey(key: K): void {
    const x = this.live();
    if (x === null || !x.m.delete(keyText(key))) return;
    this.scope.setVariable(this.index, x.m.size === 0 ? null : x);
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
    return this.live() !== null;
  }
}
