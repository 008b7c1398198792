import type { SinkSpec } from '../connectors/spec.js';
import { invalidArgument } from '../errors.js';
import type { LogicalNode } from '../plan/nodes.js';
import { OUTPUT_MODES, type OutputMode } from './output-mode.js';
import {
  type BadRecordPolicy,
  DEFAULT_QUERY_OPTIONS,
  type QueryOptions,
  type QueryOptionsInput,
  resolveQueryOptions,
} from './query-options.js';
import { Trigger, type TriggerSpec } from './trigger.js';

/** Everything a job declares: the plan, the sink and how to run it. Frozen. */
export interface QueryDefinition {
  readonly root: LogicalNode;
  readonly sink: SinkSpec;
  readonly outputMode: OutputMode;
  readonly trigger: TriggerSpec;
  readonly checkpointLocation: string | undefined;
  readonly queryName: string | undefined;
  readonly options: QueryOptions;
}

/**
 * Describes how a stream is written. Immutable: each setter returns a new writer. A job's `build`
 * function returns one.
 *
 * @example
 * stream.writeStream(sinks.console()).outputMode('append').trigger(Trigger.realTime('10 seconds'))
 */
const WRITER_BRAND = Symbol.for('millrace.writer');

export class StreamWriter {
  /** True for writers made by any copy of this library. */
  static isWriter(value: unknown): value is StreamWriter {
    return (
      typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[WRITER_BRAND] === true
    );
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
