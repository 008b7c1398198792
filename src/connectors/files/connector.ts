import type { SinkConnector, SourceConnector } from '../contract.js';
import type { FilesSinkSpec, FilesSourceSpec } from '../spec.js';
import { FilesSinkCommitter } from './committer.js';
import { checkFilesLog } from './log-check.js';
import { readManifest } from './manifest.js';
import { checkManifests } from './manifest-check.js';
import { FilesSinkRuntime } from './sink-runtime.js';
import { FilesSourceFeed } from './source-feed.js';

/** Files of a directory, read by the driver in name order as they appear, logged in the checkpoint. */
export const filesSourceConnector: SourceConnector<FilesSourceSpec> = {
  feed: (spec, context) => new FilesSourceFeed(spec, context),
  checkFiles: checkFilesLog,
};

/** A file per partition and epoch, committed by the driver's manifest of the epoch. */
export const filesSinkConnector: SinkConnector<FilesSinkSpec> = {
  writer: (spec, context) => new FilesSinkRuntime(spec, context.partition),
  committer: (spec, mode) => new FilesSinkCommitter(spec, mode === 'complete' ? 'complete' : 'append'),
  hasCommitted: async (spec, epoch) => (await readManifest(spec.path, epoch)) !== undefined,
  refusesAsyncProgress: () =>
    'asyncProgressTracking cannot be used with sinks.files: its manifests commit each epoch exactly ' +
    'once, and a restart would redo epochs whose commit was not logged; turn asyncProgressTracking off',
  refusesGroup: () =>
    'sinks.files cannot be written by a group yet: its manifest is one per directory, and every task would write it',
  record: (spec) => ({ path: spec.path }),
  recoversFromOutput: 'goes by the manifests in its output directory',
  compare: (before, after) =>
    before.path !== undefined && after.path !== undefined && before.path !== after.path
      ? [
          `the files sink's directory changed from ${before.path} to ${after.path} (a redone epoch is ` +
            'recognised by its manifest in the output directory)',
        ]
      : [],
  checkOutput: async (record, committed, hasOffsets) => {
    if (record.path === undefined) {
      return {
        damage: [],
        checked: 0,
        note:
          "does not record the files sink's output directory (an older version wrote it), so its manifests " +
          'are not checked here; the next run records it, and checks them when it starts',
      };
    }
    const found = await checkManifests(record.path, committed, hasOffsets);
    return { damage: found.damage, checked: found.manifests };
  },
};
