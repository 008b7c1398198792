/**
 * Millrace: low-latency stream processing for Node.js.
 *
 * A query is defined in a job module (`export default defineJob((job) => ...)`) and started with
 * `startQuery(url)` or `millrace run <job>`. See docs/api.md.
 */
export { type AggregateSpec, type Aggregator, agg } from './api/aggregates.js';
export {
  type ArrowType,
  type ArrowTypeName,
  type ArrowUdfCall,
  type ArrowUdfOptions,
  arrowUdf,
  type ColumnExpr,
  lit,
  type ScalarUdf,
  udf,
  type WindowTimeExpr,
  windowTime,
} from './api/expressions.js';
export { defineJob, JobContext, type JobModule, type JobParams } from './api/job.js';
export {
  type JoinCombine,
  type JoinTimeRange,
  type JoinType,
  mergeRows,
  type StaticFileFormat,
  type StaticJoinOptions,
  type StaticTable,
  type StreamJoinOptions,
  statics,
} from './api/join.js';
export type { OutputMode } from './api/output-mode.js';
export type { BadRecordPolicy, LateRowPolicy, QueryOptions, QueryOptionsInput } from './api/query-options.js';
export type { RestartPolicy, RestartPolicyInput } from './api/restart-policy.js';
export type { SideOutputInput, SideOutputTarget } from './api/side-output-target.js';
export {
  type ExpiredTimer,
  type ListState,
  type MapState,
  type ProcessorHandle,
  type ProcessorSource,
  StatefulProcessor,
  type StateOptions,
  type TimeMode,
  type TimerValues,
  type TransformWithStateOptions,
  type ValueState,
} from './api/stateful-processor.js';
export { GroupedStream, KeyedStream, type OperatorOptions, Stream } from './api/stream.js';
export {
  type AvailableNowTrigger,
  type MicroBatchTrigger,
  type OnceTrigger,
  type ProcessingTimeTrigger,
  type RealTimeTrigger,
  Trigger,
  type TriggerSpec,
} from './api/trigger.js';
export {
  type AnyWindow,
  type SessionWindow,
  sessionWindow,
  type TimeWindow,
  type WindowBounds,
  window,
} from './api/window.js';
export { type QueryDefinition, StreamWriter } from './api/writer.js';
export type { SinkEpoch } from './connectors/contract.js';
export * from './connectors/index.js';
export { ErrorCode, MillraceError, type SerializedError } from './errors.js';
export { DIAGNOSTICS_CHANNELS } from './metrics/diagnostics.js';
export type { LatencyKind, LatencyQuantiles, LatencySummary } from './metrics/latency.js';
export {
  type QueryIdleEvent,
  type QueryStartedEvent,
  type QueryTerminatedEvent,
  type StreamingQueryListener,
  streams,
} from './metrics/listeners.js';
export type {
  EpochCommit,
  SinkProgress,
  SourceProgress,
  StateOperatorProgress,
  StreamingQueryProgress,
} from './metrics/progress.js';
export { type MetricsServer, type MetricsServerOptions, serveMetrics } from './metrics/server.js';
export type { KeySpec } from './plan/nodes.js';
export type { RestartEvent } from './runtime/driver/restarts.js';
export { type StartOptions, startQuery } from './runtime/driver/start-query.js';
export {
  type MemorySinkHandle,
  type MemorySourceHandle,
  type QueryState,
  type QueryStatus,
  StreamingQuery,
} from './runtime/driver/streaming-query.js';
export {
  type GroupEvents,
  type GroupOptions,
  type GroupProgress,
  GroupQuery,
  type GroupTask,
} from './runtime/group/group-query.js';
export type { JobLocation } from './runtime/job-loader.js';
export type { DeadLetter, LateRow } from './runtime/messages.js';
export { ManualClock } from './runtime/time/clock.js';
export { type Duration, parseDuration } from './util/duration.js';
