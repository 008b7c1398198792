import { fileURLToPath } from 'node:url';
import type { SinkSpec } from '../connectors/spec.js';
import { ErrorCode, MillraceError } from '../errors.js';
import type { LogicalNode } from './nodes.js';
import type { OutputMode } from './output-mode.js';
import type { QueryOptions } from './query-options.js';
import type { TriggerSpec } from './trigger.js';

/** Parameters of a run (`--param k=v` on the CLI, `params` in `startQuery`). */
export type JobParams = Readonly<Record<string, string>>;

/** Everything a job declares: the plan, the sink and how to run it. Frozen. */
export interface QueryDefinition {
  readonly root: LogicalNode;
  readonly sink: SinkSpec;
  readonly outputMode: OutputMode;
  readonly trigger: TriggerSpec;
  readonly checkpointLocation: string | undefined;
  readonly queryName: string | undefined;
  readonly options: QueryOptions;
}

/** Marks the default export of a job module (`defineJob`), whichever copy of the library made it. */
export const JOB_BRAND = Symbol.for('millrace.job');

/**
 * A job module's build function, called with a context for the run's parameters: the API's
 * `defineJob` makes it, so that the engine, which never imports the API, can build the query.
 */
export const JOB_QUERY = Symbol.for('millrace.job.query');

/** Marks a stream writer (`StreamWriter`), whichever copy of the library made it. */
export const WRITER_BRAND = Symbol.for('millrace.writer');

/** A job module's default export, as the engine sees it (`JobModule` in `api/job.ts`). */
export interface DefinedJob {
  readonly [JOB_BRAND]: true;
  /** @internal Builds the query: what `build` returns for these parameters. */
  readonly [JOB_QUERY]: (params: JobParams) => unknown;
}

export function isJobModule(value: unknown): value is DefinedJob {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[JOB_BRAND] === true &&
    typeof (value as Record<symbol, unknown>)[JOB_QUERY] === 'function'
  );
}

/** True for writers made by any copy of this library. */
export function isWriter(value: unknown): value is { readonly definition: QueryDefinition } {
  return (
    typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[WRITER_BRAND] === true
  );
}

/**
 * Runs a job's build function and checks that it returned a writer. An error the build throws
 * that is not the engine's own (a `TypeError` in the job's code, say) is `INVALID_JOB` naming the
 * module, with the error, and its stack, as `cause`; the engine's errors (a missing parameter, a
 * builder's bad argument) keep their codes, as their messages already say what is wrong.
 */
export function buildJob(job: DefinedJob, params: JobParams, where: string): QueryDefinition {
  let result: unknown;
  try {
    result = job[JOB_QUERY](params);
  } catch (e) {
    if (e instanceof MillraceError) throw e;
    const what = e instanceof Error ? `${e.name}: ${e.message}` : `non-Error value thrown: ${String(e)}`;
    throw new MillraceError(
      ErrorCode.INVALID_JOB,
      `the job ${modulePath(where)} failed while building its query: ${what}`,
      { cause: e },
    );
  }
  if (!isWriter(result)) {
    throw new MillraceError(
      ErrorCode.INVALID_JOB,
      `${where}: build must return stream.writeStream(sink)..., got ${result === null ? 'null' : typeof result}`,
    );
  }
  return result.definition;
}

/** A job module as users know it: its path when it is a file. */
function modulePath(jobUrl: string): string {
  return jobUrl.startsWith('file:') ? fileURLToPath(jobUrl) : jobUrl;
}
