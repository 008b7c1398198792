import type { Consumer, GroupPartitionsAssigner } from '@platformatic/kafka';
import { ErrorCode, MillraceError } from '../../errors.js';
import {
  ASSIGNOR_NAME,
  ASSIGNOR_VERSION,
  assignPartitions,
  completeJoin,
  decodeOwned,
  encodeOwned,
  type GroupAssignment,
  type GroupMembership,
} from './group-protocol.js';
import type { TopicPartition } from './types.js';

/** A membership's settings, checked (group-membership.ts). */
export interface PlatformaticMembershipOptions {
  readonly brokers: readonly string[];
  readonly groupId: string;
  readonly topics: readonly string[];
  readonly sessionTimeout: number;
  readonly heartbeatInterval: number;
  readonly rebalanceTimeout: number;
  readonly instanceId: string | undefined;
  readonly clientId: string | undefined;
  readonly onAssigned: (assignment: GroupAssignment) => void;
  readonly onError: ((error: Error) => void) | undefined;
}

/** The first Node release `@platformatic/kafka` runs on (its `engines`). */
const NODE_FROM = [22, 22] as const;

/** Why `@platformatic/kafka` cannot run on this Node (`version`: `process.versions.node`), or null. */
export function platformaticUnsupported(version: string = process.versions.node): string | null {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > NODE_FROM[0] || (major === NODE_FROM[0] && minor >= NODE_FROM[1])) return null;
  return `the '@platformatic/kafka' client needs Node ${NODE_FROM.join('.')} or later, and this is Node ${version}`;
}

/**
 * A membership kept by `@platformatic/kafka`: the same assignor and user data as the kafkajs one,
 * so members of one group may use either; with `instanceId`, static membership. The consumer only
 * joins (it never opens a message stream: the tasks fetch their partitions themselves); the
 * client rejoins by itself when a heartbeat learns of a rebalance.
 */
export async function joinWithPlatformatic(options: PlatformaticMembershipOptions): Promise<GroupMembership> {
  const unsupported = platformaticUnsupported();
  if (unsupported !== null) {
    throw new MillraceError(
      ErrorCode.INVALID_ARGUMENT,
      `group ${options.groupId}: ${unsupported}; use the 'kafkajs' client here`,
    );
  }
  const { Consumer } = await import('@platformatic/kafka');
  let owned: readonly TopicPartition[] = [];
  let current: GroupAssignment | null = null;
  let rebalance = 0;
  let leaving = false;
  const assigner: GroupPartitionsAssigner = (_leader, members, topics, metadata) => {
    const partitions = new Map<string, number[]>();
    for (const topic of topics) {
      const count = metadata.topics.get(topic)?.partitionsCount ?? 0;
      partitions.set(
        topic,
        Array.from({ length: count }, (_, p) => p),
      );
    }
    const plan = assignPartitions(
      [...members.values()].map((m) => ({
        id: m.memberId,
        owned: decodeOwned(typeof m.metadata === 'string' ? Buffer.from(m.metadata) : m.metadata),
      })),
      partitions,
    );
    return [...members.keys()].map((memberId) => ({
      memberId,
      assignments: new Map(
        Object.entries(plan.get(memberId) ?? {}).map(([topic, ps]) => [topic, { topic, partitions: ps }]),
      ),
    }));
  };
  const consumer: Consumer = new Consumer({
    clientId: options.clientId ?? 'millrace',
    bootstrapBrokers: [...options.brokers],
    groupId: options.groupId,
    ...(options.instanceId !== undefined ? { groupInstanceId: options.instanceId } : {}),
    sessionTimeout: options.sessionTimeout,
    rebalanceTimeout: options.rebalanceTimeout,
    heartbeatInterval: options.heartbeatInterval,
    protocols: [{ name: ASSIGNOR_NAME, version: ASSIGNOR_VERSION }],
    partitionAssigner: assigner,
    // What this member owns, sent with each join so the assignment can keep it there.
    protocolsMetadata: () => encodeOwned(owned),
    retries: 5,
    retryDelay: 200,
  });
  consumer.on('consumer:group:join', (payload) => {
    const partitions = (payload.assignments ?? [])
      .flatMap(({ topic, partitions: ps }) => ps.map((p): TopicPartition => [topic, p]))
      .sort(([t1, p1], [t2, p2]) => (t1 < t2 ? -1 : t1 > t2 ? 1 : p1 - p2));
    owned = partitions;
    rebalance += 1;
    current = { memberId: payload.memberId, leader: payload.isLeader === true, partitions, rebalance };
    options.onAssigned(current);
  });
  consumer.on('error', (e: Error) => {
    if (leaving) return;
    options.onError?.(
      new MillraceError(
        ErrorCode.SOURCE_READ_FAILED,
        `group ${options.groupId}: membership failed: ${e.message}`,
        {
          cause: e,
        },
      ),
    );
  });
  let left: Promise<void> | null = null;
  const leave = (): Promise<void> => {
    leaving = true;
    left ??= (async () => {
      // Errors leaving are the coordinator's to sort out: the member times out of the group.
      await new Promise<void>((resolve) => consumer.leaveGroup(false, () => resolve()));
      await new Promise<void>((resolve) => consumer.close(true, () => resolve()));
    })();
    return left;
  };
  return completeJoin(
    options.groupId,
    async () => {
      consumer.topics.trackAll(...options.topics);
      await consumer.joinGroup();
    },
    () => current,
    leave,
  );
}
