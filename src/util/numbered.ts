/** Decimal text of 0..999, of 000..999 (three digits), and runs of 0 to 15 zeros. */
const UP_TO_999 = Array.from({ length: 1000 }, (_, i) => String(i));
const THREE_DIGITS = UP_TO_999.map((d) => d.padStart(3, '0'));
const ZEROS = Array.from({ length: 16 }, (_, i) => '0'.repeat(i));

/** Decimal text of a non-negative integer, concatenated from table entries. */
function decimal(n: number): string {
  return n < 1000 ? UP_TO_999[n]! : decimal(Math.floor(n / 1000)) + THREE_DIGITS[n % 1000]!;
}

/**
 * `prefix` followed by the decimal text of `n` (a non-negative integer), zero-padded to `width`
 * digits (at most 15), as a new string: the same text as `` `${prefix}${n}` `` (or with
 * `padStart`), built by concatenating table entries instead — for generators of rows that make
 * ids from numbers, such as the benchmarks' and the fraud demo's.
 *
 * Why: V8 keeps the strings of Number → String conversions in a cache, an old-generation array.
 * Every miss (every new card or transaction number) stores a new young string there, and each
 * scavenge must then copy up to 16 384 of them and visit as many slots: ≈ 4 ms per scavenge in
 * a worker of the windowed count, whatever its state, and the survivors, promoted, fill the old
 * generation (a full collection every ≈ 2 s). A source reading rows from Kafka or files creates
 * its strings by decoding, without that cache, so generated rows are made the same way. The
 * strings are still new and unhashed, as decoded ones are.
 */
export function numbered(prefix: string, n: number, width = 0): string {
  const digits = decimal(n);
  const pad = Math.min(width, 15) - digits.length;
  return pad > 0 ? prefix + ZEROS[pad]! + digits : prefix + digits;
}
