/** The types of the query handle's public surface (StreamingQuery). */

import type { SinkEpoch } from '../../connectors/contract.js';
import type { MillraceError } from '../../errors.js';
import type { EpochCommit, StreamingQueryProgress } from '../../metrics/progress.js';
import type { DeadLetter, LateRow } from '../messages.js';
import type { RestartEvent } from './restarts.js';

/** `restarting`: an attempt failed and the restart policy starts another one after a backoff. */
export type QueryState = 'active' | 'restarting' | 'stopping' | 'terminated' | 'failed';

/** Spark's StreamingQueryStatus, plus the lifecycle state and the restart policy's account. */
export interface QueryStatus {
  message: string;
  isDataAvailable: boolean;
  isTriggerActive: boolean;
  isActive: boolean;
  state: QueryState;
  /** The attempt running (1 for the first run); each restart of the restart policy starts the next. */
  attempt: number;
  /** Restarts the restart policy still allows (0 without one). */
  retriesLeft: number;
  /** The error that ended the last failed attempt, or null. */
  lastError: { code: string; message: string } | null;
  /** While the query waits to restart: when the next attempt starts (ms since the epoch, query clock). */
  nextRestartAt: number | null;
}

/** A test's handle on a memory source. */
export interface MemorySourceHandle<T = unknown> {
  readonly name: string;
  readonly partitions: number;
  /** Appends rows to the source's replayable log (partition 0 by default). */
  addData(rows: Iterable<T>, partition?: number): void;
}

/** A test's handle on a memory sink. */
export interface MemorySinkHandle<T = unknown> {
  /** Every row written so far: epochs in order; within an epoch, partition by partition in emit order. */
  rows(): T[];
  /** The same rows grouped by epoch. */
  epochs(): SinkEpoch<T>[];
}

export interface QueryEvents {
  started: [];
  progress: [StreamingQueryProgress];
  idle: [StreamingQueryProgress];
  terminated: [MillraceError | null];
  restarting: [RestartEvent];
  deadLetter: [DeadLetter];
  lateRow: [LateRow];
  /** The epoch, and what committing it took on the driver. */
  epochCommitted: [number, EpochCommit];
}
