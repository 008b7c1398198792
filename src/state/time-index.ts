/**
 * State keys by the event time at which they fall due (a window's end, a dedup key's expiry), so a
 * watermark can close exactly what it passes without scanning the store. Entries are removed
 * lazily: the owner checks, when an entry comes due, that its key still falls due at that time.
 */
export class TimeIndex {
  /** Due times with keys, ascending. */
  private readonly times: number[] = [];
  private readonly keys = new Map<number, string[]>();

  add(time: number, key: string): void {
    let list = this.keys.get(time);
    if (list === undefined) {
      list = [];
      this.keys.set(time, list);
      // Times mostly arrive in order: insert from the back.
      const times = this.times;
      let i = times.length;
      while (i > 0 && times[i - 1]! > time) i--;
      times.splice(i, 0, time);
    }
    list.push(key);
  }

  /**
   * Forgets one entry (a deleted timer), so an owner that re-arms a key on every row does not
   * leave an entry per row behind. The time itself stays listed until it comes due.
   */
  remove(time: number, key: string): void {
    const list = this.keys.get(time);
    if (list === undefined) return;
    const i = list.lastIndexOf(key);
    if (i >= 0) list.splice(i, 1);
  }

  /**
   * Adds many entries at once, in any order (a restore): `keys[i]` falls due at `times[i]`. Keys of
   * one time keep their order, as if added one by one in time order; the times are sorted once (a
   * state holds few distinct due times and many keys: a sort of every entry costs far more).
   */
  addAll(times: readonly number[], keys: readonly string[]): void {
    const lists = this.keys;
    let added = false;
    for (let i = 0; i < times.length; i++) {
      const time = times[i]!;
      let list = lists.get(time);
      if (list === undefined) {
        list = [];
        lists.set(time, list);
        this.times.push(time);
        added = true;
      }
      list.push(keys[i]!);
    }
    if (added) this.times.sort((a, b) => a - b);
  }

  /** The earliest due time (Infinity when empty). */
  first(): number {
    return this.times.length === 0 ? Number.POSITIVE_INFINITY : this.times[0]!;
  }

  /**
   * Hands the keys of every time due at or before `watermark` to `due`, a list per time, in time
   * order (keys in the order added), and forgets them: the lists are the caller's from then on.
   */
  takeUpTo(watermark: number, due: (keys: string[], time: number) => void): void {
    const times = this.times;
    while (times.length > 0 && times[0]! <= watermark) {
      const time = times.shift()!;
      const keys = this.keys.get(time)!;
      this.keys.delete(time);
      due(keys, time);
    }
  }

  /** Hands every entry due at or before `watermark` to `due`, in time order, and forgets it. */
  closeUpTo(watermark: number, due: (key: string, time: number) => void): void {
    const times = this.times;
    while (times.length > 0 && times[0]! <= watermark) {
      const time = times.shift()!;
      const keys = this.keys.get(time)!;
      this.keys.delete(time);
      for (const key of keys) due(key, time);
    }
  }
}
