import type { OutputMode } from '../api/output-mode.js';
import type { SinkCommitter } from '../runtime/driver/epoch-coordinator.js';
import { FilesSinkCommitter } from './files/committer.js';
import type { SinkSpec } from './spec.js';

/**
 * The driver's half of a sink that commits epochs, or null for sinks that do not. `commitOnHosts`
 * asks every worker host to commit the epoch in its sink partitions (and resolves when all did).
 */
export function createSinkCommitter(
  sink: SinkSpec,
  mode: OutputMode,
  commitOnHosts: (epoch: number) => Promise<void>,
): SinkCommitter | null {
  if (sink.kind === 'files') return new FilesSinkCommitter(sink, mode === 'complete' ? 'complete' : 'append');
  // An exactly-once Kafka sink's partitions commit their transactions once the epoch is logged.
  if (sink.kind === 'kafka' && sink.exactlyOnce) return { commit: (epoch) => commitOnHosts(epoch) };
  return null;
}
