/**
 * Words of a string entry: its hash, its id + 1 (0: an empty entry), its length (−1: the
 * characters are not inline), then {@link INLINE_CHARS} Latin-1 characters, four to a word.
 */
const STRIDE = 8;
const HEADER_WORDS = 3;
const INLINE_CHARS = (STRIDE - HEADER_WORDS) * 4;
/** Entries of a new table (a power of two); the table doubles when half full. */
const INITIAL_ENTRIES = 64;

/**
 * The interned keys of a {@link GroupTable}: each distinct key value has a small integer id, the
 * value of an id is kept, and a lookup finds the id of a value equal to the one a row brings.
 *
 * String keys, the common case (card, user, device ids), are found in an open-addressing table of
 * Int32 entries, each holding a key's hash and, for keys of up to 20 Latin-1 characters, the
 * characters themselves. A row's key, a new string decoded from its frame, is found by reading one
 * entry (one cache line) and never the interned string. A `Map` compares against the stored string
 * object, one more cache miss, plus one for its bucket: at 100 000 keys a lookup costs ≈ 780 ns
 * through a Map and ≈ 370 ns here (measured on the development machine, with the caches busy).
 *
 * Numbers, booleans and null are kept in a Map by value, other values by their JSON text.
 */
export class KeyIds {
  /** Value of each id; undefined for ids not in use. */
  private readonly values: unknown[] = [];
  private entries = new Int32Array(INITIAL_ENTRIES * STRIDE);
  private mask = INITIAL_ENTRIES - 1;
  private shift = 32 - Math.log2(INITIAL_ENTRIES);
  private strings = 0;
  /** Per table: varies the hashes, so no fixed set of keys collides in every process. */
  private readonly seed = (Math.random() * 0x1_0000_0000) | 0;
  private readonly scalars = new Map<unknown, number>();
  private readonly objects = new Map<string, number>();

  /** Ids handed out so far (in use or not): every id is below it. */
  get span(): number {
    return this.values.length;
  }

  /** The id of `v`, or −1. undefined is the same key as null. */
  find(v: unknown): number {
    if (typeof v === 'string') return this.findString(v);
    if (typeof v === 'object' && v !== null) return this.objects.get(JSON.stringify(v)) ?? -1;
    return this.scalars.get(v === undefined ? null : v) ?? -1;
  }

  /** Gives `v` (not interned) the id `id` (not in use; at most {@link span}). */
  set(v: unknown, id: number): void {
    if (id === this.values.length) this.values.push(v);
    else this.values[id] = v;
    if (typeof v === 'string') this.addString(v, id);
    else if (typeof v === 'object' && v !== null) this.objects.set(JSON.stringify(v), id);
    else this.scalars.set(v === undefined ? null : v, id);
  }

  /** The key value of `id`. */
  value(id: number): unknown {
    return this.values[id];
  }

  /** Forgets id `id` and its value. */
  delete(id: number): void {
    const v = this.values[id];
    this.values[id] = undefined;
    if (typeof v === 'string') this.deleteString(v);
    else if (typeof v === 'object' && v !== null) this.objects.delete(JSON.stringify(v));
    else this.scalars.delete(v === undefined ? null : v);
  }

  // --- strings ----------------------------------------------------------------------------------

  private hash(s: string): number {
    let h = this.seed ^ 0x811c9dc5;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
    return h;
  }

  /** The entry a hash starts probing at. */
  private home(h: number): number {
    return Math.imul(h, 0x9e3779b1) >>> this.shift;
  }

  private findString(s: string): number {
    const e = this.entries;
    const h = this.hash(s);
    for (let i = this.home(h); ; i = (i + 1) & this.mask) {
      const at = i * STRIDE;
      const id = e[at + 1]!;
      if (id === 0) return -1;
      if (e[at] === h && this.holds(at, s)) return id - 1;
    }
  }

  /** Whether the entry at word `at` is string `s` (its hash is known to match). */
  private holds(at: number, s: string): boolean {
    const e = this.entries;
    const n = e[at + 2]!;
    if (n < 0) return this.values[e[at + 1]! - 1] === s;
    if (n !== s.length) return false;
    let word = 0;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      // The stored key is all Latin-1: a wider character cannot match it.
      if (c > 0xff) return false;
      word |= c << ((i & 3) << 3);
      if ((i & 3) === 3 || i === n - 1) {
        if (e[at + HEADER_WORDS + (i >> 2)] !== word) return false;
        word = 0;
      }
    }
    return true;
  }

  private addString(s: string, id: number): void {
    if ((this.strings + 1) * 2 > this.mask + 1) this.grow();
    this.strings++;
    const h = this.hash(s);
    let i = this.home(h);
    while (this.entries[i * STRIDE + 1] !== 0) i = (i + 1) & this.mask;
    this.write(i * STRIDE, h, id, s);
  }

  private write(at: number, h: number, id: number, s: string): void {
    const e = this.entries;
    e[at] = h;
    e[at + 1] = id + 1;
    e.fill(0, at + HEADER_WORDS, at + STRIDE);
    let inline = s.length <= INLINE_CHARS;
    for (let i = 0; inline && i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c > 0xff) inline = false;
      else e[at + HEADER_WORDS + (i >> 2)]! |= c << ((i & 3) << 3);
    }
    e[at + 2] = inline ? s.length : -1;
  }

  private grow(): void {
    const old = this.entries;
    this.entries = new Int32Array(old.length * 2);
    this.mask = this.mask * 2 + 1;
    this.shift--;
    for (let at = 0; at < old.length; at += STRIDE) {
      if (old[at + 1] === 0) continue;
      let i = this.home(old[at]!);
      while (this.entries[i * STRIDE + 1] !== 0) i = (i + 1) & this.mask;
      for (let k = 0; k < STRIDE; k++) this.entries[i * STRIDE + k] = old[at + k]!;
    }
  }

  /** Removes string `s`'s entry, shifting back the entries probed past it (no tombstones). */
  private deleteString(s: string): void {
    const e = this.entries;
    const mask = this.mask;
    const h = this.hash(s);
    let hole = this.home(h);
    for (; ; hole = (hole + 1) & mask) {
      const at = hole * STRIDE;
      if (e[at + 1] === 0) return;
      if (e[at] === h && this.holds(at, s)) break;
    }
    this.strings--;
    for (let j = (hole + 1) & mask; ; j = (j + 1) & mask) {
      const at = j * STRIDE;
      if (e[at + 1] === 0) break;
      // An entry may fill the hole if the hole lies between its home and where it is.
      const home = this.home(e[at]!);
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        e.copyWithin(hole * STRIDE, at, at + STRIDE);
        hole = j;
      }
    }
    e.fill(0, hole * STRIDE, hole * STRIDE + STRIDE);
  }
}
