import type { LatencyRecorder } from '../../metrics/latency.js';
import type { StaticIndex } from '../../operators/contract.js';
import type { BadRecordPolicy, LateRowPolicy } from '../../plan/query-options.js';
import type { DoorbellTable } from '../channel/doorbell.js';
import type { FrameWriter } from '../channel/frame-codec.js';
import type { StateCheckpointSpec } from '../messages.js';
import type { Clock } from '../time/clock.js';
import type { PreciseTime } from '../time/precise-time.js';

/** What a worker host shares with the tasks it runs. */
export interface HostContext {
  readonly hostIndex: number;
  /** The query's id (stable across runs of a checkpoint). */
  readonly queryId: string;
  /** The group task the query runs (docs/scale-out.md), or null. */
  readonly task: string | null;
  readonly clock: Clock;
  /** Real time with µs resolution, agreed between threads (latency only). */
  readonly precise: PreciseTime;
  readonly recorder: LatencyRecorder;
  /** The host's ring to the driver. */
  readonly result: FrameWriter;
  readonly onBadRecord: BadRecordPolicy;
  readonly onLateRow: LateRowPolicy;
  readonly multipleWatermarkPolicy: 'min' | 'max';
  /** Micro-batch execution (see HostSpec.microBatch). */
  readonly microBatch: boolean;
  /** See HostSpec.arrowMaxRecordsPerBatch. */
  readonly arrowMaxRecordsPerBatch: number | undefined;
  /** See HostSpec.watermarks, HostSpec.lateWatermark and HostSpec.scheduleStarts. */
  readonly initialWatermarks: readonly number[];
  readonly initialLateWatermark: number;
  readonly scheduleStarts: readonly (number | null)[];
  /** See HostSpec.firstEpoch. */
  readonly firstEpoch: number;
  /** See HostSpec.state. */
  readonly state: StateCheckpointSpec | null;
  /** Clock time the query started (NaN until every worker runs). */
  readonly startTime: number;
  readonly bells: DoorbellTable;
  readonly bell: number;
  /** Static join tables by operator id, loaded once for the host (see static-tables.ts). */
  readonly staticTables: ReadonlyMap<number, StaticIndex>;
  /**
   * Starts the host's tasks if the driver has started the query's clock; a source task calls it
   * when a marker arrives first (whatever the driver wrote before the marker is visible then).
   */
  ensureStarted(): void;
  /** Processing time for scheduling: the manual clock's value, or precise wall time. */
  scheduleNow(): number;
  /**
   * Processing time as of the host loop's current pass: the manual clock's value, or the system
   * clock as read once at the start of the pass. The row path reads this, not the clock: a clock
   * read costs about as much as handing a row to the next operator.
   */
  passNow(): number;
  /** Fails a task if the host's stateful tasks hold more state than the query allows (see StateMemoryLimit). */
  checkStateMemory(): void;
}
