import { resolve } from 'node:path';
import { invalidArgument } from '../../errors.js';
import { type Duration, parseDuration } from '../../util/duration.js';
import type { FilesSourceSpec } from '../spec.js';
import { checkName, checkRateLimit } from '../validate.js';

export interface FilesSourceOptions {
  /** The directory to read. Relative paths are resolved from the working directory. */
  path: string;
  /** `json` (default): JSON lines. `csv`: a header line, then records (values are strings). `arrow`: Arrow IPC files. */
  format?: 'json' | 'csv' | 'arrow';
  name?: string;
  /** How often the directory is listed for new files (default 100 ms). */
  pollInterval?: Duration;
  /** Micro-batch mode: at most this many rows per batch (default: all that are available). */
  maxRowsPerTrigger?: number;
}

/**
 * Rows from the files of a directory. New files are picked up in name order; each is read whole
 * and recorded in the checkpoint (`sources/<id>/files/`) before its rows are sent, so a restart
 * reads the same rows at the same offsets. Files whose names begin with `.` or `_` are ignored:
 * write a file under such a name and rename it into place. A file must not change once it is in
 * the directory.
 *
 * Pointed at the output of `sinks.files` (a directory with `_manifest/`), it reads only the files
 * the manifests commit, epoch by epoch.
 *
 * @example
 * job.readStream(sources.files<Payment>({ path: 'in/payments', format: 'json' }))
 */
export function filesSource<T = unknown>(options: FilesSourceOptions): FilesSourceSpec<T> {
  if (typeof options?.path !== 'string' || options.path === '') {
    throw invalidArgument('sources.files: path must name a directory');
  }
  const format = options.format ?? 'json';
  if (format !== 'json' && format !== 'csv' && format !== 'arrow') {
    throw invalidArgument(
      `sources.files: format must be 'json', 'csv' or 'arrow', got ${JSON.stringify(format)}`,
    );
  }
  const name = checkName('sources.files', options.name, false);
  const pollIntervalMs = parseDuration(options.pollInterval ?? 100, 'sources.files: pollInterval');
  if (pollIntervalMs <= 0) throw invalidArgument('sources.files: pollInterval must be positive');
  const path = resolve(options.path);
  return Object.freeze({
    kind: 'files',
    name,
    path,
    format,
    partitions: 1,
    pollIntervalMs,
    maxRowsPerTrigger: checkRateLimit('sources.files', options.maxRowsPerTrigger),
    description: `FileStreamSource[${path}]`,
  });
}
