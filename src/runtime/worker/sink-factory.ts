import { sinkConnector } from '../../connectors/registry.js';
import type { SinkRuntime } from '../../connectors/sink-runtime.js';
import type { SinkSpec } from '../../connectors/spec.js';
import type { HostContext } from './host-context.js';
import { originArg, type RowMeta } from './row-meta.js';

interface SinkTaskInfo {
  readonly index: number;
  readonly partition: number;
  readonly meta: RowMeta;
}

/**
 * The worker side of a sink task (its connector's `writer`). A row the sink sends back to the
 * driver travels on the host's result ring with the metadata of the row being written.
 */
export function createSinkRuntime(spec: SinkSpec, host: HostContext, task: SinkTaskInfo): SinkRuntime {
  const m = task.meta;
  return sinkConnector(spec).writer(spec, {
    partition: task.partition,
    queryId: host.queryId,
    task: host.task,
    firstEpoch: host.firstEpoch,
    toDriver: (row) => {
      host.result.writeData(row, task.index, m.sourceTime, m.readTime, originArg(m));
    },
  });
}
