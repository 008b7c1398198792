import type { SinkConnector } from '../contract.js';
import type { ForeachBatchSinkSpec, ForeachSinkSpec } from '../spec.js';
import { ForeachBatchRuntime } from './batch.js';
import { ForeachRuntime } from './runtime.js';

/** The user's ForeachWriter, driven in the worker that owns each partition. */
export const foreachSinkConnector: SinkConnector<ForeachSinkSpec> = {
  writer: (spec, context) => new ForeachRuntime(spec, context.partition, context.firstEpoch),
};

/** The user's function, called with each partition's rows of an epoch as an Arrow table. */
export const foreachBatchSinkConnector: SinkConnector<ForeachBatchSinkSpec> = {
  writer: (spec) => new ForeachBatchRuntime(spec),
};
