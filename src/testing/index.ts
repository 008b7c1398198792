/**
 * `millrace/testing`: what users test their own jobs with — the same tools the project's tests
 * use. Memory sources and sinks go in the job; the query handle gives `source(name).addData`,
 * `sink(name).rows()` / `epochs()`, `processAllAvailable()` and, with `{ clock: 'manual' }`,
 * `clock.advance(ms)`. `testStream` strings those together as an action list.
 */
export { sinks, sources } from '../connectors/index.js';
export { type StartOptions, startQuery } from '../runtime/driver/start-query.js';
export type {
  MemorySinkHandle,
  MemorySourceHandle,
  StreamingQuery,
} from '../runtime/driver/streaming-query.js';
export { ManualClock } from '../runtime/time/clock.js';
export { type DataPart, type FailureMatcher, TestStream, testStream } from './test-stream.js';
