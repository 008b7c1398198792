import { type GroupOptions, GroupQuery } from '../group/group-query.js';
import type { JobLocation } from '../job-loader.js';
import { launchQuery, type StartOptions } from './launch-query.js';
import type { StreamingQuery } from './streaming-query.js';

export type { StartOptions } from './launch-query.js';

/**
 * Starts a query from a job module. Everything checkable is checked before any thread starts
 * (plan-time errors reject with their code); the promise resolves once every worker runs.
 *
 * With `group`, the process joins the job's Kafka consumer group and runs only the tasks of the
 * partitions the group gives it (docs/scale-out.md); the promise resolves once it holds its first
 * assignment, with a {@link GroupQuery}.
 *
 * @example
 * const q = await startQuery(new URL('./jobs/fraud.js', import.meta.url), { params: { rate: 5000 } });
 */
export function startQuery(
  job: JobLocation,
  options: StartOptions & { group: string | GroupOptions },
): Promise<GroupQuery>;
export function startQuery(job: JobLocation, options?: StartOptions): Promise<StreamingQuery>;
export function startQuery(
  job: JobLocation,
  options: StartOptions & { group?: string | GroupOptions } = {},
): Promise<StreamingQuery | GroupQuery> {
  const { group, ...rest } = options;
  if (group !== undefined) return GroupQuery.start(job, rest, group);
  return launchQuery(job, rest);
}
