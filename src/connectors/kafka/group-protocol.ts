import { ErrorCode, MillraceError } from '../../errors.js';
import { assignTasks } from './task-assignor.js';
import type { TopicPartition } from './types.js';

/**
 * What every member of a job's group speaks, whichever Kafka client keeps its membership
 * (group-membership.ts): the assignor's name, the user data a member joins with, and the leader's
 * assignment.
 */

/** What the group gave this member. */
export interface GroupAssignment {
  /** This member's id in the group (the coordinator's name for it). */
  readonly memberId: string;
  /** Whether this member computed the assignment (the group's leader). */
  readonly leader: boolean;
  /** The topic partitions this member owns, sorted by topic, then partition. */
  readonly partitions: readonly TopicPartition[];
  /** 1 for the first assignment this member got, then one more for each rebalance it took part in. */
  readonly rebalance: number;
}

export interface GroupMembership {
  /** The latest assignment (null before the first). */
  readonly assignment: GroupAssignment | null;
  /** Leaves the group (the others rebalance at once) and closes the connection. */
  leave(): Promise<void>;
}

/** The assignor's protocol name; every member of a group must speak it. */
export const ASSIGNOR_NAME = 'millrace-sticky';
export const ASSIGNOR_VERSION = 1;

/** What a member sends when it joins: the partitions it owns now, as `topic`, `partition` pairs. */
interface StickyUserData {
  owned: TopicPartition[];
}

/** What a member sends when it joins (the user data of its subscription): the partitions it owns. */
export function encodeOwned(owned: readonly TopicPartition[]): Buffer {
  const userData: StickyUserData = { owned: [...owned] };
  return Buffer.from(JSON.stringify(userData));
}

/** The partitions in a member's user data; none when it cannot be read. */
export function decodeOwned(userData: Buffer | undefined): TopicPartition[] {
  if (userData === undefined || userData.length === 0) return [];
  try {
    const data = JSON.parse(userData.toString()) as StickyUserData;
    return Array.isArray(data.owned)
      ? data.owned.filter(
          (tp): tp is TopicPartition =>
            Array.isArray(tp) && typeof tp[0] === 'string' && Number.isInteger(tp[1]),
        )
      : [];
  } catch {
    return [];
  }
}

/**
 * The leader's assignment, whichever client runs it: partition p of every subscribed topic is one
 * task (co-partitioned topics are read together), and `assignTasks` shares the tasks out, keeping
 * each member's partitions where balance allows. Returns each member's partitions by topic.
 */
export function assignPartitions(
  members: readonly { readonly id: string; readonly owned: readonly TopicPartition[] }[],
  partitions: ReadonlyMap<string, readonly number[]>,
): Map<string, Record<string, number[]>> {
  const byTask = new Map<string, TopicPartition[]>();
  for (const [topic, ids] of partitions) {
    for (const p of ids) byTask.set(String(p), [...(byTask.get(String(p)) ?? []), [topic, p]]);
  }
  const claims = members.map((m) => ({
    id: m.id,
    owned: [...new Set(m.owned.map(([, partition]) => String(partition)))],
  }));
  const plan = assignTasks(claims, [...byTask.keys()]);
  const out = new Map<string, Record<string, number[]>>();
  for (const { id } of members) {
    const assignment: Record<string, number[]> = {};
    for (const task of plan.get(id) ?? []) {
      for (const [topic, partition] of byTask.get(task) ?? []) (assignment[topic] ??= []).push(partition);
    }
    out.set(id, assignment);
  }
  return out;
}

/**
 * Completes a join, whichever client made it: runs `join` (which resolves once the first
 * assignment arrived); on failure leaves and rejects with `SOURCE_READ_FAILED`; else returns the
 * membership, which reads the latest assignment through `latest`.
 */
export async function completeJoin(
  groupId: string,
  join: () => Promise<void>,
  latest: () => GroupAssignment | null,
  leave: () => Promise<void>,
): Promise<GroupMembership> {
  try {
    await join();
    if (latest() === null) throw new Error('joined, and was given no assignment');
  } catch (e) {
    await leave();
    if (e instanceof MillraceError) throw e;
    throw new MillraceError(
      ErrorCode.SOURCE_READ_FAILED,
      `group ${groupId}: could not join: ${(e as Error).message}`,
      {
        cause: e,
      },
    );
  }
  return {
    get assignment() {
      return latest();
    },
    leave,
  };
}
