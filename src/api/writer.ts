import type { SinkSpec } from '../connectors/spec.js';
import { invalidArgument } from '../errors.js';
import { isWriter, type QueryDefinition, WRITER_BRAND } from '../plan/job.js';
import type { LogicalNode } from '../plan/nodes.js';
import { OUTPUT_MODES, type OutputMode } from '../plan/output-mode.js';
import {
  type BadRecordPolicy,
  DEFAULT_QUERY_OPTIONS,
  type QueryOptionsInput,
  resolveQueryOptions,
} from '../plan/query-options.js';
import { Trigger, type TriggerSpec } from '../plan/trigger.js';

export type { QueryDefinition };

/**
 * Describes how a stream is written. Immutable: each setter returns a new writer. A job's `build`
 * function returns one.
 *
 * @example
 * stream.writeStream(sinks.console()).outputMode('append').trigger(Trigger.realTime('10 seconds'))
 */
export class StreamWriter {
  /** True for writers made by any copy of this library. */
  static isWriter(value: unknown): value is StreamWriter {
    return isWriter(value);
  }

  /** @internal */
  private constructor(readonly definition: QueryDefinition) {
    Object.freeze(this);
  }

  /** @internal */
  static create(root: LogicalNode, sink: SinkSpec): StreamWriter {
    if (typeof sink !== 'object' || sink === null || typeof (sink as { kind?: unknown }).kind !== 'string') {
      throw invalidArgument('writeStream(sink): pass a sink, e.g. sinks.memory({ name: "out" })');
    }
    return new StreamWriter(
      Object.freeze({
        root,
        sink,
        outputMode: 'append',
        trigger: Trigger.realTime(),
        checkpointLocation: undefined,
        queryName: undefined,
        options: DEFAULT_QUERY_OPTIONS,
      }),
    );
  }

  private with(patch: Partial<QueryDefinition>): StreamWriter {
    return new StreamWriter(Object.freeze({ ...this.definition, ...patch }));
  }

  /** `append` (default), `update` or `complete`; checked against the plan and the sink. */
  outputMode(mode: OutputMode): StreamWriter {
    if (!OUTPUT_MODES.includes(mode)) {
      throw invalidArgument(
        `outputMode must be one of ${OUTPUT_MODES.join(', ')}, got ${JSON.stringify(mode)}`,
      );
    }
    return this.with({ outputMode: mode });
  }

  /** Real-time (default) or micro-batch execution: a `Trigger.*` value. */
  trigger(trigger: TriggerSpec): StreamWriter {
    const kinds = ['realTime', 'processingTime', 'availableNow', 'once'];
    if (typeof trigger !== 'object' || trigger === null || !kinds.includes(trigger.kind)) {
      throw invalidArgument(
        'trigger: pass Trigger.realTime(), Trigger.processingTime(), Trigger.availableNow() or Trigger.once()',
      );
    }
    return this.with({ trigger });
  }

  checkpointLocation(path: string): StreamWriter {
    if (typeof path !== 'string' || path === '')
      throw invalidArgument('checkpointLocation must be a non-empty path');
    return this.with({ checkpointLocation: path });
  }

  queryName(name: string): StreamWriter {
    if (typeof name !== 'string' || name === '')
      throw invalidArgument('queryName must be a non-empty string');
    return this.with({ queryName: name });
  }

  /** What to do with rows user code throws on (see {@link BadRecordPolicy}). */
  onBadRecord(policy: BadRecordPolicy): StreamWriter {
    return this.options({ onBadRecord: policy });
  }

  /** Sets query options (workers, shufflePartitions, ringCapacityBytes, progressInterval, ...). */
  options(options: QueryOptionsInput): StreamWriter {
    return this.with({ options: resolveQueryOptions(this.definition.options, options) });
  }

  /** Sets one query option. */
  option<K extends keyof QueryOptionsInput>(key: K, value: QueryOptionsInput[K]): StreamWriter {
    return this.options({ [key]: value } as QueryOptionsInput);
  }
}

Object.defineProperty(StreamWriter.prototype, WRITER_BRAND, { value: true });
