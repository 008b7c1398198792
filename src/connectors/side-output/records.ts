import type { Message } from 'kafkajs';
import { describeLocation } from '../../errors.js';
import type { DeadLetter, LateRow } from './side-records.js';

/**
 * How dead letters and late rows are written to their side outputs.
 *
 * In files, one JSON object a line: the record as `q.deadLetters()` / `q.lateRows()` return it —
 * a dead letter's `row`, `error` (`name`, `message`, `code`), `operator`, `stage`, `partition`,
 * `sourceOffset` and `timestamp`; a late row's `row`, `watermark`, `operator`, `stage`,
 * `partition`, `sourceOffset` and `timestamp`.
 *
 * In Kafka, as the Kafka source's `deadLetterTopic` writes what it cannot decode: the row as the
 * record's value (JSON), and what happened in headers — `millrace.error` (the message),
 * `millrace.error.name`, `millrace.error.code`, or a late row's `millrace.watermark`; then
 * `millrace.location` (`operator map#1 'parse', stage 0, partition 1, row at source 0 partition 1
 * offset 5`), `millrace.source` (`<source>-<partition>@<offset>`, also the record's key, so the
 * records of one source row share a partition) and `millrace.timestamp` (ms).
 *
 * Values JSON cannot hold are written as: byte arrays `{ "base64": "..." }`, bigints as strings,
 * `Map`s as objects, `Set`s as arrays; `-Infinity` (no watermark yet) as null.
 */

/** A value as one line of JSON (with its newline). */
export function jsonLine(value: unknown): string {
  return `${toJson(value)}\n`;
}

/** A value as JSON text. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, jsonReplacer) ?? 'null';
}

function jsonReplacer(this: unknown, key: string, value: unknown): unknown {
  // `this[key]` is the value before its toJSON (a Buffer's would be { type, data: [...] }).
  const original = (this as Record<string, unknown>)[key];
  if (original instanceof Uint8Array) {
    return {
      base64: Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('base64'),
    };
  }
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Map) return Object.fromEntries(value);
  if (value instanceof Set) return [...value];
  return value;
}

/** The Kafka record of a dead letter. */
export function deadLetterMessage(d: DeadLetter): Message {
  const headers: Record<string, string> = {
    'millrace.error': d.error.message,
    'millrace.error.name': d.error.name,
  };
  if (d.error.code !== undefined) headers['millrace.error.code'] = d.error.code;
  return withPlace({ value: toJson(d.row), headers }, d);
}

/** The Kafka record of a late row. */
export function lateRowMessage(r: LateRow): Message {
  return withPlace({ value: toJson(r.row), headers: { 'millrace.watermark': String(r.watermark) } }, r);
}

function withPlace(m: { value: string; headers: Record<string, string> }, at: DeadLetter | LateRow): Message {
  const source =
    at.sourceOffset && `${at.sourceOffset.source}-${at.sourceOffset.partition}@${at.sourceOffset.offset}`;
  m.headers['millrace.location'] = describeLocation(at);
  if (source !== undefined) m.headers['millrace.source'] = source;
  m.headers['millrace.timestamp'] = String(at.timestamp);
  return { key: source ?? null, ...m };
}
