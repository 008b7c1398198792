import type { Vector } from 'apache-arrow';

/** The values of a vector as JS values (null where null). */
export function vectorValues(v: Vector): ArrayLike<unknown> {
  if (v.nullCount === 0) return v.toArray() as ArrayLike<unknown>;
  const out = new Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v.get(i);
  return out;
}
