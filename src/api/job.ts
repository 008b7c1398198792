import type { SourceSpec } from '../connectors/spec.js';
import { ErrorCode, MillraceError } from '../errors.js';
import { type DefinedJob, JOB_BRAND, JOB_QUERY, type JobParams } from '../plan/job.js';
import { Stream } from './stream.js';
import type { StreamWriter } from './writer.js';

export type { JobParams };

/**
 * What `build` receives: read parameters and open streams. The same job module is imported by the
 * driver and by every worker, and `build` runs in each of them, so it must be deterministic.
 */
export class JobContext {
  /** @internal */
  constructor(readonly params: JobParams) {}

  /**
   * A parameter as a string. With a default, a missing parameter takes the default; a number
   * default makes the parameter a number.
   *
   * @example const rate = job.param('rate', 1000)
   */
  param(name: string): string;
  param(name: string, defaultValue: string): string;
  param(name: string, defaultValue: number): number;
  param(name: string, defaultValue?: string | number): string | number {
    const value = this.params[name];
    if (value === undefined) {
      if (defaultValue === undefined) {
        throw new MillraceError(
          ErrorCode.MISSING_PARAM,
          `the job needs parameter '${name}': pass --param ${name}=... (CLI) or params: { ${name}: ... } (startQuery)`,
        );
      }
      return defaultValue;
    }
    if (typeof defaultValue === 'number') {
      const n = Number(value);
      if (value.trim() === '' || !Number.isFinite(n)) {
        throw new MillraceError(
          ErrorCode.INVALID_ARGUMENT,
          `parameter '${name}' must be a number, got '${value}'`,
        );
      }
      return n;
    }
    return value;
  }

  /** Opens a stream from a source. */
  readStream<T>(source: SourceSpec<T>): Stream<T> {
    if (
      typeof source !== 'object' ||
      source === null ||
      typeof (source as { kind?: unknown }).kind !== 'string'
    ) {
      throw new MillraceError(
        ErrorCode.INVALID_ARGUMENT,
        'readStream(source): pass a source, e.g. sources.memory({ name })',
      );
    }
    return new Stream<T>(Object.freeze({ kind: 'source', source, label: undefined }));
  }
}

/** A job module's default export. */
export interface JobModule extends DefinedJob {
  /** @internal */
  readonly build: (job: JobContext) => StreamWriter;
}

/**
 * Declares a job. The module's default export must be the result.
 *
 * @example
 * export default defineJob((job) =>
 *   job.readStream(sources.rate({ rowsPerSecond: 10 }))
 *     .filter((r) => r.value % 2 === 0)
 *     .writeStream(sinks.console()));
 */
export function defineJob(build: (job: JobContext) => StreamWriter): JobModule {
  if (typeof build !== 'function') {
    throw new MillraceError(
      ErrorCode.INVALID_JOB,
      'defineJob(build): build must be a function (job) => writer',
    );
  }
  return Object.freeze({
    [JOB_BRAND]: true as const,
    build,
    [JOB_QUERY]: (params: JobParams) => build(new JobContext(params)),
  });
}
