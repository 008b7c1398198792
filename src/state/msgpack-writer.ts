import { Packr } from 'msgpackr';

/** What values other than strings, numbers, booleans and null are packed with (as state files are). */
const fallback = new Packr({ useRecords: false });

const encoder = new TextEncoder();

/**
 * Writes msgpack values one after the other into a growing byte buffer, so a checkpoint piece is
 * encoded as its entries are walked, straight to bytes. Collecting JS arrays of keys and states
 * and packing them later kept every piece's arrays alive through the whole walk (promoted, then
 * old-generation garbage) and cost a second pass over the entries.
 *
 * Strings, numbers, booleans and null are written here; anything else goes through msgpackr with
 * the state files' options. Any msgpack decoder reads the result as the same values: integers
 * beyond 32 bits, and −0, are written as float64.
 */
export class MsgpackWriter {
  bytes: Uint8Array;
  private view: DataView;
  length = 0;

  constructor(capacity = 256) {
    this.bytes = new Uint8Array(capacity);
    this.view = new DataView(this.bytes.buffer);
  }

  /** The bytes written so far (a view). */
  written(): Uint8Array {
    return this.bytes.subarray(0, this.length);
  }

  value(v: unknown): void {
    if (typeof v === 'string') this.string(v);
    else if (typeof v === 'number') this.number(v);
    else if (v === null) this.byte(0xc0);
    else if (v === true) this.byte(0xc3);
    else if (v === false) this.byte(0xc2);
    else this.raw(fallback.pack(v));
  }

  /** The header of an array of `n` items (the items follow). */
  arrayHeader(n: number): void {
    this.room(5);
    if (n < 16) {
      this.bytes[this.length++] = 0x90 | n;
    } else if (n < 0x10000) {
      this.bytes[this.length] = 0xdc;
      this.view.setUint16(this.length + 1, n);
      this.length += 3;
    } else {
      this.bytes[this.length] = 0xdd;
      this.view.setUint32(this.length + 1, n);
      this.length += 5;
    }
  }

  number(n: number): void {
    this.room(9);
    const b = this.bytes;
    const at = this.length;
    if (Number.isInteger(n) && !Object.is(n, -0) && n >= -0x80000000 && n <= 0xffffffff) {
      if (n >= 0) {
        if (n < 0x80) {
          b[at] = n;
          this.length = at + 1;
        } else if (n < 0x100) {
          b[at] = 0xcc;
          b[at + 1] = n;
          this.length = at + 2;
        } else if (n < 0x10000) {
          b[at] = 0xcd;
          this.view.setUint16(at + 1, n);
          this.length = at + 3;
        } else {
          b[at] = 0xce;
          this.view.setUint32(at + 1, n);
          this.length = at + 5;
        }
      } else if (n >= -32) {
        b[at] = n & 0xff;
        this.length = at + 1;
      } else if (n >= -0x80) {
        b[at] = 0xd0;
        this.view.setInt8(at + 1, n);
        this.length = at + 2;
      } else if (n >= -0x8000) {
        b[at] = 0xd1;
        this.view.setInt16(at + 1, n);
        this.length = at + 3;
      } else {
        b[at] = 0xd2;
        this.view.setInt32(at + 1, n);
        this.length = at + 5;
      }
      return;
    }
    b[at] = 0xcb;
    this.view.setFloat64(at + 1, n);
    this.length = at + 9;
  }

  string(s: string): void {
    const n = s.length;
    // Short ASCII, the common key: one header byte, one byte a character.
    if (n < 32) {
      this.room(n + 1);
      const b = this.bytes;
      const at = this.length;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        b[at + 1 + i] = c;
      }
      if (i === n) {
        b[at] = 0xa0 | n;
        this.length = at + 1 + n;
        return;
      }
    }
    // At most 3 bytes a UTF-16 code unit, after a header of at most 5.
    this.room(n * 3 + 5);
    const at = this.length;
    const header = n * 3 < 32 ? 1 : n * 3 < 0x100 ? 2 : n * 3 < 0x10000 ? 3 : 5;
    const { written } = encoder.encodeInto(s, this.bytes.subarray(at + header));
    const size = written ?? 0;
    const b = this.bytes;
    if (header === 1) {
      b[at] = 0xa0 | size;
    } else if (header === 2) {
      b[at] = 0xd9;
      b[at + 1] = size;
    } else if (header === 3) {
      b[at] = 0xda;
      this.view.setUint16(at + 1, size);
    } else {
      b[at] = 0xdb;
      this.view.setUint32(at + 1, size);
    }
    this.length = at + header + size;
  }

  /** Appends bytes that already are msgpack. */
  raw(bytes: Uint8Array): void {
    this.room(bytes.length);
    this.bytes.set(bytes, this.length);
    this.length += bytes.length;
  }

  private byte(b: number): void {
    this.room(1);
    this.bytes[this.length++] = b;
  }

  private room(n: number): void {
    if (this.length + n <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.length + n));
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
    this.view = new DataView(grown.buffer);
  }
}
