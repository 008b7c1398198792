import { join } from 'node:path';

/**
 * Where things live in a checkpoint directory (docs/operations.md, "What the checkpoint holds"):
 *
 * ```
 * <checkpoint>/
 *   metadata                                  query id, plan description, offset log format
 *   lock                                      the running owner's lease (lease.ts)
 *   offsets/<epoch>                           "v1"|"v2", epoch metadata, then the sources' offsets
 *   commits/<epoch>                           "v1", {"nextBatchWatermarkMs", "watermarks", "watermarkHeldBack"?}
 *   state/<operatorId>/<partition>/<version>.changelog | .snapshot
 *   state/<operatorId>/_metadata/schema
 *   sources/<sourceId>/...                    per-source files (a generator's start time)
 *   sinks/<sinkId>/...                        per-sink manifests
 * ```
 */
/** A generated source's file under its `sources/<id>/`: when the first run's schedule began. */
export const SCHEDULE_FILE = 'schedule';

export class CheckpointLayout {
  constructor(readonly root: string) {}

  get metadata(): string {
    return join(this.root, 'metadata');
  }

  get lock(): string {
    return join(this.root, 'lock');
  }

  get offsetsDir(): string {
    return join(this.root, 'offsets');
  }

  get commitsDir(): string {
    return join(this.root, 'commits');
  }

  offsets(epoch: number): string {
    return join(this.offsetsDir, String(epoch));
  }

  commit(epoch: number): string {
    return join(this.commitsDir, String(epoch));
  }

  stateDir(operatorId: number, partition: number): string {
    return join(this.root, 'state', String(operatorId), String(partition));
  }

  stateFile(operatorId: number, partition: number, version: number, kind: 'changelog' | 'snapshot'): string {
    return join(this.stateDir(operatorId, partition), `${version}.${kind}`);
  }

  stateSchema(operatorId: number): string {
    return join(this.root, 'state', String(operatorId), '_metadata', 'schema');
  }

  sourceDir(sourceId: string): string {
    return join(this.root, 'sources', sourceId);
  }

  sinkDir(sinkId: string): string {
    return join(this.root, 'sinks', sinkId);
  }
}
