import { FilesSinkRuntime } from '../../connectors/files/sink-runtime.js';
import { ForeachBatchRuntime } from '../../connectors/foreach/batch.js';
import { ForeachRuntime } from '../../connectors/foreach/runtime.js';
import { KafkaSinkRuntime } from '../../connectors/kafka/sink-runtime.js';
import type { SinkRuntime } from '../../connectors/sink-runtime.js';
import type { SinkKind, SinkSpec } from '../../connectors/spec.js';
import type { HostContext } from './host-context.js';
import type { RowMeta } from './row-meta.js';
import { DriverSinkRuntime } from './sink-output.js';

interface SinkTaskInfo {
  readonly index: number;
  readonly partition: number;
  readonly meta: RowMeta;
}

/** The worker side of each sink kind. A new sink kind does not compile until it is listed. */
const FACTORIES: Record<SinkKind, (spec: any, host: HostContext, task: SinkTaskInfo) => SinkRuntime> = {
  memory: (_spec, host, task) => new DriverSinkRuntime(host, task.index, task.meta),
  console: (_spec, host, task) => new DriverSinkRuntime(host, task.index, task.meta),
  foreach: (spec, host, task) => new ForeachRuntime(spec, task.partition, host.firstEpoch),
  foreachBatch: (spec) => new ForeachBatchRuntime(spec),
  files: (spec, _host, task) => new FilesSinkRuntime(spec, task.partition),
  kafka: (spec, host, task) => new KafkaSinkRuntime(spec, task.partition, host.queryId, host.firstEpoch),
};

export function createSinkRuntime(spec: SinkSpec, host: HostContext, task: SinkTaskInfo): SinkRuntime {
  return FACTORIES[spec.kind](spec, host, task);
}
