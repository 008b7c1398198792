/**
 * Wire layer: splits a socket's byte stream into size-prefixed request frames, parses the request header,
 * runs requests one at a time per connection (as Kafka does, so responses come back in request order),
 * and frames responses. Also small helpers for the array shapes every API uses.
 */
import type { Socket } from 'node:net';
import { Decoder, Encoder } from './kafkajs.js';

/** The fixed part of every request (request header v1; we advertise no flexible versions). */
export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
}

/** What a handler hands back: a response body, nothing (acks=0), or DROP to close the connection. */
export const DROP = Symbol('drop connection');
export type HandlerResult = Encoder | null | typeof DROP;

/** Processes one request; `body` is positioned just after the header. */
export type Dispatch = (
  conn: Connection,
  header: RequestHeader,
  body: Decoder,
) => HandlerResult | Promise<HandlerResult>;

/** One client connection. Requests are handled strictly in arrival order. */
export class Connection {
  /** Aborted when the socket closes, so long-polls waiting for data give up early. */
  readonly closed = new AbortController();
  private pending: Buffer = Buffer.alloc(0);
  private readonly queue: Buffer[] = [];
  private running = false;

  constructor(
    readonly socket: Socket,
    private readonly dispatch: Dispatch,
    private readonly responseDelayMs: () => number,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.onData(chunk));
    socket.on('error', () => {});
    socket.on('close', () => this.closed.abort());
  }

  /** Closes the connection abruptly (the client sees a reset / unexpected close). */
  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 4) {
      const size = this.pending.readInt32BE(0);
      if (this.pending.length < 4 + size) break;
      this.queue.push(this.pending.subarray(4, 4 + size));
      this.pending = this.pending.subarray(4 + size);
    }
    if (!this.running) void this.drain();
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      for (let frame = this.queue.shift(); frame; frame = this.queue.shift()) {
        if (this.closed.signal.aborted) return;
        await this.handle(frame);
      }
    } finally {
      this.running = false;
    }
  }

  private async handle(frame: Buffer): Promise<void> {
    const decoder = new Decoder(frame);
    const header: RequestHeader = {
      apiKey: decoder.readInt16(),
      apiVersion: decoder.readInt16(),
      correlationId: decoder.readInt32(),
      clientId: decoder.readString(),
    };
    let result: HandlerResult;
    try {
      result = await this.dispatch(this, header, decoder);
    } catch {
      // A request the broker cannot parse or does not support: Kafka closes the connection too.
      result = DROP;
    }
    if (result === DROP) return this.destroy();
    if (result === null || this.closed.signal.aborted) return;
    const delay = this.responseDelayMs();
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    const response = new Encoder(result.size() + 8).writeInt32(header.correlationId).writeEncoder(result);
    this.socket.write(
      new Encoder(response.size() + 4).writeInt32(response.size()).writeEncoder(response).buffer,
    );
  }
}

/** Writes an int32 count and then each item through `write`, directly into `enc`. */
export function writeArray<T>(
  enc: Encoder,
  items: Iterable<T>,
  write: (enc: Encoder, item: T) => void,
): Encoder {
  const list = [...items];
  enc.writeInt32(list.length);
  for (const item of list) write(enc, item);
  return enc;
}

/** Reads an int64 that fits a JS number (offsets, producer ids). */
export const readLong = (d: Decoder): number => Number(d.readInt64());

/** A nullable array: null (Kafka's "all") when the count is -1. */
export function readNullableArray<T>(d: Decoder, read: (d: Decoder) => T): T[] | null {
  const count = d.readInt32();
  if (count < 0) return null;
  const out: T[] = [];
  for (let i = 0; i < count; i++) out.push(read(d));
  return out;
}

/** Throttle time field (always 0) when the version carries one. */
export const throttle = (enc: Encoder, present: boolean): Encoder => (present ? enc.writeInt32(0) : enc);
