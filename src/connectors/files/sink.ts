import { resolve } from 'node:path';
import { invalidArgument } from '../../errors.js';
import type { FilesSinkSpec } from '../spec.js';

export interface FilesSinkOptions {
  /** The output directory (created if missing). Relative paths are resolved from the working directory. */
  path: string;
  /** `json` (default): JSON lines, `.jsonl`. `arrow`: Arrow IPC files, `.arrow`. */
  format?: 'json' | 'arrow';
}

/**
 * Writes the query's rows into files in a directory: each sink partition writes one file per epoch
 * (`part-<epoch>-<partition>-<attempt>.jsonl|.arrow`), and when the epoch commits the driver writes
 * `_manifest/<epoch>` listing them. Files not in a manifest (an epoch that did not commit, an
 * attempt that was redone) are never part of the output: readers — `sources.files` pointed at the
 * directory, or `readFilesSinkOutput` — read through the manifest. With a checkpoint the output is
 * exactly-once. Append and complete modes (in complete mode each epoch's files are the whole
 * result, and readers take the newest epoch).
 *
 * @example
 * stream.writeStream(sinks.files({ path: 'out/alerts', format: 'json' })).checkpointLocation('ckpt/alerts')
 */
export function filesSink(options: FilesSinkOptions): FilesSinkSpec {
  if (typeof options?.path !== 'string' || options.path === '') {
    throw invalidArgument('sinks.files: path must name a directory');
  }
  const format = options.format ?? 'json';
  if (format !== 'json' && format !== 'arrow') {
    throw invalidArgument(`sinks.files: format must be 'json' or 'arrow', got ${JSON.stringify(format)}`);
  }
  const path = resolve(options.path);
  return Object.freeze({
    kind: 'files',
    path,
    format,
    description: `FileSink[${path}]`,
    supportedModes: Object.freeze(['append', 'complete'] as const),
  });
}
