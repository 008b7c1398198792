import { invalidArgument } from '../../errors.js';
import type { ForeachSinkSpec, ForeachWriter } from '../spec.js';

/**
 * Hands every row to user code in the worker that owns the partition (Spark's `foreach`).
 * At-least-once: after a failure an epoch may be replayed; `open(partition, epochId)` lets the
 * writer recognise and skip an epoch it already wrote.
 *
 * @example
 * sinks.foreach({ process: (alert) => pager.send(alert) })
 */
export function foreachSink<T = any>(writer: ForeachWriter<T>): ForeachSinkSpec {
  if (typeof writer !== 'object' || writer === null || typeof writer.process !== 'function') {
    throw invalidArgument('sinks.foreach: expected an object with a process(row) function');
  }
  for (const k of ['open', 'close'] as const) {
    if (writer[k] !== undefined && typeof writer[k] !== 'function') {
      throw invalidArgument(`sinks.foreach: ${k} must be a function when given`);
    }
  }
  return Object.freeze({
    kind: 'foreach',
    writer,
    description: 'ForeachSink',
    supportedModes: Object.freeze(['append', 'update', 'complete'] as const),
  });
}
