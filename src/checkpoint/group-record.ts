import { randomBytes } from 'node:crypto';
import { link, mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode, MillraceError } from '../errors.js';

/**
 * The record at the root of a group's checkpoint (`<checkpoint>/group`; docs/scale-out.md): the
 * query every task belongs to, and the topics and partition count the group was made for. Each
 * task's own checkpoint is `<checkpoint>/tasks/<task>`.
 */
export interface GroupRecord {
  readonly queryId: string;
  readonly topics: readonly string[];
  readonly partitions: number;
}

const recordPath = (location: string) => join(location, 'group');

/** The group's record at `location`, or undefined when it is not a group's checkpoint. */
export async function readGroupRecord(location: string): Promise<GroupRecord | undefined> {
  let text: string;
  try {
    text = await readFile(recordPath(location), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') {
      return undefined;
    }
    throw e;
  }
  try {
    const r = JSON.parse(text) as GroupRecord;
    if (typeof r.queryId !== 'string' || !Array.isArray(r.topics) || !Number.isInteger(r.partitions)) {
      throw new Error('it lacks queryId, topics or partitions');
    }
    return r;
  } catch (e) {
    throw new MillraceError(
      ErrorCode.CHECKPOINT_CORRUPT,
      `checkpoint file ${recordPath(location)} is corrupt: ${(e as Error).message}`,
    );
  }
}

/** The task directories of a group's checkpoint, in task order (`0.0`, `0.1`, … `0.10`). */
export async function groupTasks(location: string): Promise<{ task: string; dir: string }[]> {
  const names = await readdir(join(location, 'tasks')).catch(() => [] as string[]);
  return names
    .filter((n) => /^\d+\.\d+$/.test(n))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
    .map((task) => ({ task, dir: join(location, 'tasks', task) }));
}

/**
 * The group's record at `location`: written there atomically by the first process (with
 * `proposed`); every later one reads it and must find the same topics and partitions, or fails
 * with `CHECKPOINT_INCOMPATIBLE_CHANGE`.
 */
export async function groupRecord(location: string, proposed: GroupRecord): Promise<GroupRecord> {
  await mkdir(location, { recursive: true });
  const temp = join(location, `.group.${randomBytes(6).toString('hex')}.tmp`);
  await writeFile(temp, `${JSON.stringify(proposed)}\n`);
  try {
    await link(temp, recordPath(location));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    await unlink(temp).catch(() => {});
  }
  const found = (await readGroupRecord(location))!;
  const same = (a: readonly string[], b: readonly string[]) => a.join('\0') === b.join('\0');
  if (!same(found.topics, proposed.topics) || found.partitions !== proposed.partitions) {
    throw new MillraceError(
      ErrorCode.CHECKPOINT_INCOMPATIBLE_CHANGE,
      `the group's checkpoint at ${location} was made for topics ${found.topics.join(', ')} with ` +
        `${found.partitions} partitions; this job reads ${proposed.topics.join(', ')} with ${proposed.partitions}`,
    );
  }
  return found;
}
