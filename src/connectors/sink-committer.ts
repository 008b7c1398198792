import { ErrorCode, MillraceError } from '../errors.js';
import type { OutputMode } from '../plan/output-mode.js';
import type { SinkCommitter } from './contract.js';
import { sinkConnector } from './registry.js';
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
  const committer = sinkConnector(sink).committer?.(sink, mode, commitOnHosts) ?? null;
  return committer === null ? null : labelFailures(sink, committer);
}

/**
 * A sink's commit that fails is the sink's failure, not the checkpoint's: it fails the query with
 * `SINK_COMMIT_FAILED` naming the sink, the epoch and the cause (a restart policy restarts it, and
 * the new attempt redoes the epoch). A failure that already has a code of its own keeps it.
 */
function labelFailures(sink: SinkSpec, committer: SinkCommitter): SinkCommitter {
  return {
    commit: (epoch, messages) =>
      committer.commit(epoch, messages).catch((e: unknown) => {
        if (e instanceof MillraceError && e.code !== ErrorCode.TASK_FAILED) throw e;
        throw new MillraceError(
          ErrorCode.SINK_COMMIT_FAILED,
          `${sink.description}: cannot commit epoch ${epoch}: ${(e as Error)?.message ?? String(e)}`,
          { cause: e },
        );
      }),
  };
}
