import type { KeySpec } from './nodes.js';

/**
 * Stable hashing of keys to partitions. Stable means: the same key maps to the same partition in
 * every thread, every run and every version of the process — state is partitioned by it and
 * checkpoints outlive processes. So no `Map` identity, no per-process seeds, only arithmetic on
 * the key's value.
 */

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** Murmur3's 32-bit finaliser: spreads the bits of a weak hash. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function hashString(s: string, seed: number): number {
  let h = seed ^ FNV_OFFSET;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return fmix32(h);
}

const SEED_STRING = 0x1;
const SEED_NUMBER = 0x2;
const SEED_OTHER = 0x3;
const NULL_HASH = fmix32(0x9e3779b9);
const TRUE_HASH = fmix32(0x7f4a7c15);
const FALSE_HASH = fmix32(0x3c6ef372);

/** 32-bit unsigned hash of a key value. Numbers that are equal hash equally (1 and 1.0). */
export function stableHash(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return hashString(value, SEED_STRING);
    case 'number':
      if ((value | 0) === value) return fmix32(value ^ SEED_NUMBER);
      return hashString(String(value), SEED_NUMBER);
    case 'boolean':
      return value ? TRUE_HASH : FALSE_HASH;
    case 'bigint':
      return Number.isSafeInteger(Number(value)) && (Number(value) | 0) === Number(value)
        ? fmix32(Number(value) ^ SEED_NUMBER)
        : hashString(value.toString(), SEED_NUMBER);
    case 'undefined':
      return NULL_HASH;
    default:
      if (value === null) return NULL_HASH;
      if (Array.isArray(value)) return combineAll(value);
      if (value instanceof Date) return stableHash(value.getTime());
      return hashString(JSON.stringify(value) ?? '', SEED_OTHER);
  }
}

function combine(h: number, next: number): number {
  return fmix32(Math.imul(h ^ next, 0x9e3779b1) + 0x7f4a7c15);
}

function combineAll(values: readonly unknown[]): number {
  let h = 0x12345;
  for (let i = 0; i < values.length; i++) h = combine(h, stableHash(values[i]));
  return h;
}

/** Partition of a hash. */
export function partitionOf(hash: number, partitions: number): number {
  return hash % partitions;
}

/** Compiles a key spec into `row => hash` (once per task). Composite keys allocate nothing per row. */
export function keyHasher(key: KeySpec): (row: any) => number {
  if (typeof key === 'string') return (row) => stableHash(row == null ? undefined : row[key]);
  if (typeof key === 'function') return (row) => stableHash(key(row));
  const cols = [...key];
  return (row) => {
    let h = 0x12345;
    for (let i = 0; i < cols.length; i++) h = combine(h, stableHash(row == null ? undefined : row[cols[i]!]));
    return h;
  };
}

/** The key value itself (for state stores and messages). */
export function keyExtractor(key: KeySpec): (row: any) => unknown {
  if (typeof key === 'string') return (row) => (row == null ? undefined : row[key]);
  if (typeof key === 'function') return key;
  const cols = [...key];
  return (row) => cols.map((c) => (row == null ? undefined : row[c]));
}
