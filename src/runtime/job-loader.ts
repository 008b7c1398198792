import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCode, MillraceError } from '../errors.js';
import { type AnalyzedPlan, analyze } from '../plan/analyze.js';
import { buildJob, type DefinedJob, isJobModule, type JobParams, type QueryDefinition } from '../plan/job.js';
import { cutPlan, type PlanCut } from './group/cut-plan.js';

/** A job module location: a file URL, a URL string, or a path. */
export type JobLocation = URL | string;

export function jobUrlOf(location: JobLocation): string {
  if (location instanceof URL) return location.href;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(location)) return location;
  return pathToFileURL(isAbsolute(location) ? location : resolve(location)).href;
}

/**
 * Imports a job module. TypeScript modules are loaded through tsx's `tsImport`, which works inside
 * worker threads too (an `--import tsx` in a worker's execArgv does not, on Node 20).
 */
export async function importJob(jobUrl: string): Promise<DefinedJob> {
  let mod: { default?: unknown };
  try {
    if (/\.[cm]?tsx?$/.test(new URL(jobUrl).pathname)) {
      const { tsImport } = await import('tsx/esm/api');
      mod = (await tsImport(jobUrl, import.meta.url)) as { default?: unknown };
    } else {
      mod = (await import(jobUrl)) as { default?: unknown };
    }
  } catch (cause) {
    if (cause instanceof MillraceError) throw cause;
    throw new MillraceError(
      ErrorCode.INVALID_JOB,
      `cannot load job module ${jobUrl}: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }
  let job = mod.default;
  // A CommonJS-compiled module arrives wrapped once more.
  if (!isJobModule(job) && isJobModule((job as { default?: unknown } | undefined)?.default)) {
    job = (job as { default: unknown }).default;
  }
  if (!isJobModule(job)) {
    throw new MillraceError(
      ErrorCode.INVALID_JOB,
      `${jobUrl} is not a job module: its default export must be defineJob((job) => ...)`,
    );
  }
  return job;
}

/**
 * Builds and analyzes a job's plan, or the half of it a group task runs (`cut`). Everything
 * checkable at plan time is checked here.
 */
export function planJob(
  job: DefinedJob,
  params: JobParams,
  jobUrl: string,
  cut: PlanCut | null = null,
): AnalyzedPlan {
  const definition: QueryDefinition = buildJob(job, params, jobUrl);
  return analyze(cut === null ? definition : cutPlan(definition, cut));
}
