import { sinks } from '../connectors/index.js';
import { reportClockError } from './clock-probe.js';

/**
 * The job side of the probes the benchmark jobs share. A job module is built once per worker
 * thread, so each call below made while building the job keeps its "already reported" flag per
 * thread: every thread that runs a source or a sink reports its clock error once (clock-probe.ts).
 * With an empty channel name nothing is reported and nothing is added to the row path.
 */

/** `generate` of a generator source that reports this thread's clock as a source's, once. */
export function probedGenerate<T>(
  clockChannel: string,
  generate: (partition: number, offset: number, scheduled: number) => T,
): (partition: number, offset: number, scheduled: number) => T {
  if (clockChannel === '') return generate;
  let checked = false;
  return (partition, offset, scheduled) => {
    if (!checked) {
      checked = true;
      reportClockError(clockChannel, 'source');
    }
    return generate(partition, offset, scheduled);
  };
}

/**
 * A foreach sink that drops every row (the engine records each row's e2e latency as it emits it)
 * and reports this thread's clock as a sink's when it opens. `process` is the per-row call
 * (default: nothing).
 */
export function blackholeSink(clockChannel: string, process: (row: unknown) => void = () => {}) {
  let checked = clockChannel === '';
  return sinks.foreach({
    open: () => {
      if (!checked) {
        checked = true;
        reportClockError(clockChannel, 'sink');
      }
      return true;
    },
    process,
  });
}
