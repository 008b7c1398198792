import type { Table } from 'apache-arrow';
import { invalidArgument } from '../../errors.js';
import type { SinkCommitMessage, SinkRuntime } from '../sink-runtime.js';
import type { ForeachBatchSinkSpec } from '../spec.js';

/**
 * Hands what each sink partition wrote in an epoch to user code as one Arrow table, with the epoch
 * id as the batch id (Spark's `foreachBatch`), in the worker that owns the partition. In
 * micro-batch mode an epoch is a batch; in real-time mode it is what the partition produced between
 * two checkpoints. Called for epochs with rows only. At-least-once: after a failure an epoch may
 * be handed over again, with the same id, so `fn` can recognise it. A promise returned by `fn` is
 * waited for before the epoch is acknowledged; a throw or rejection fails the query.
 *
 * @example
 * sinks.foreachBatch(async (batch, batchId) => warehouse.load(`alerts-${batchId}`, batch))
 */
export function foreachBatchSink<T = unknown>(
  fn: (batch: Table, batchId: number) => unknown,
): ForeachBatchSinkSpec & { readonly __row?: T } {
  if (typeof fn !== 'function') {
    throw invalidArgument('sinks.foreachBatch: expected a function (batch, batchId) => ...');
  }
  return Object.freeze({
    kind: 'foreachBatch',
    fn,
    description: 'ForeachBatchSink',
    supportedModes: Object.freeze(['append', 'update', 'complete'] as const),
  });
}

/** One partition of a foreachBatch sink: rows gather over the epoch and go out at its end. */
export class ForeachBatchRuntime implements SinkRuntime {
  private rows: Record<string, unknown>[] = [];

  constructor(private readonly spec: ForeachBatchSinkSpec) {}

  write(row: unknown): undefined {
    this.rows.push(row as Record<string, unknown>);
    return undefined;
  }

  epochEnd(epoch: number): Promise<SinkCommitMessage | undefined> | undefined {
    if (this.rows.length === 0) return undefined;
    const rows = this.rows;
    this.rows = [];
    return this.hand(rows, epoch);
  }

  close(): undefined {
    // Rows after the last barrier belong to no epoch that ended.
    this.rows = [];
    return undefined;
  }

  private async hand(rows: Record<string, unknown>[], epoch: number): Promise<undefined> {
    // Loaded on first use, as the files connector does: most workers never need Arrow.
    const { tableFromJSON } = await import('apache-arrow');
    await this.spec.fn(tableFromJSON(rows), epoch);
    return undefined;
  }
}
