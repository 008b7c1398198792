import type { OutputMode } from '../api/output-mode.js';
import type { SinkCommitter } from '../runtime/driver/epoch-coordinator.js';
import { FilesSinkCommitter } from './files/committer.js';
import type { SinkSpec } from './spec.js';

/** The driver's half of a sink that commits epochs, or null for sinks that do not. */
export function createSinkCommitter(sink: SinkSpec, mode: OutputMode): SinkCommitter | null {
  if (sink.kind === 'files') return new FilesSinkCommitter(sink, mode === 'complete' ? 'complete' : 'append');
  return null;
}
