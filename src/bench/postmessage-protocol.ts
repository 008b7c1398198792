import type { MessagePort } from 'node:worker_threads';

/**
 * What the main thread and the two workers of the `postMessage` baseline exchange. Counters live in
 * one SharedArrayBuffer of Int32 slots, so the main thread can sample the backlog without a message
 * round trip (which would queue behind the rows).
 */
export const kSentField = 0;
export const kProcessedField = 1;
export const kStopField = 2;
export const kFieldCount = 3;

/**
 * The clock of the baseline, in ms: the same in every thread of the process. (Each thread's
 * `timeOrigin` is taken with its `performance.now()` origin, so their sum agrees across threads to
 * within a µs; an offset measured in JavaScript does not — see clock-probe.ts.)
 */
export function sharedNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Rows the generator may have posted but the processor not yet handled before it holds off. */
export const DEFAULT_MAX_IN_FLIGHT = 200_000;

export interface GeneratorData {
  role: 'generator';
  /** Where rows go: one end of a MessageChannel whose other end the processor holds. */
  port: MessagePort;
  rowsPerSecond: number;
  maxInFlight: number;
  counters: SharedArrayBuffer;
}

export interface ProcessorData {
  role: 'processor';
  port: MessagePort;
  counters: SharedArrayBuffer;
}

export type BaselineWorkerData = GeneratorData | ProcessorData;

/** Main thread → processor. */
export type ProcessorCommand = { type: 'reset' } | { type: 'report' };

/** Worker → main thread. */
export type BaselineEvent =
  | { type: 'ready' }
  /** The generator's schedule origin, in {@link sharedNow} ms. */
  | { type: 'started'; startTime: number }
  | { type: 'reset'; processed: number }
  /** The e2e histogram (µs) since the last reset, compressed. */
  | { type: 'report'; histogram: string; processed: number };
