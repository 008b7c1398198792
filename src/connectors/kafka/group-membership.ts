import type { Consumer, GroupMember, PartitionAssigner } from 'kafkajs';
import { ErrorCode, invalidArgument, MillraceError } from '../../errors.js';
import { type Brokers, type KafkaClientSettings, kafkaClient, kafkajs, parseBrokers } from './client.js';
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
import { joinWithPlatformatic } from './platformatic-membership.js';
import type { TopicPartition } from './types.js';

export type { GroupAssignment, GroupMembership } from './group-protocol.js';

/**
 * Membership of a Kafka consumer group, for sharing a job's partitions between processes
 * (docs/scale-out.md): the group protocol decides which process owns which partitions; the
 * process reads them itself, from the offsets in its checkpoint, so the membership never fetches
 * records and never commits offsets. Assignments are balanced and sticky (task-assignor.ts).
 *
 * An assignment is advice, not a lock: during a rebalance the old and the new owner of a
 * partition may both believe they own it for a moment. What runs a partition's task holds its
 * lease in the shared checkpoint, and that is what keeps two processes from running one task.
 */

export interface GroupMembershipOptions {
  brokers: Brokers;
  /** The consumer group the processes of one job share. */
  groupId: string;
  /** The topics whose partitions are shared. */
  topics: readonly string[];
  /**
   * How long the coordinator waits for a heartbeat before it counts the member as gone and gives
   * its partitions to the others (default 10 s).
   */
  sessionTimeoutMs?: number;
  /** How often the member heartbeats (default a tenth of the session timeout). */
  heartbeatIntervalMs?: number;
  /** How long a rebalance waits for every member to rejoin (default the session timeout). */
  rebalanceTimeoutMs?: number;
  /** Called with every assignment, the first one included, in order. */
  onAssigned: (assignment: GroupAssignment) => void;
  /** Called when the membership fails for good (after kafkajs' own retries). */
  onError?: (error: Error) => void;
  /** kafkajs client settings: clientId, ssl, sasl, connectionTimeout, retry, ... */
  client?: KafkaClientSettings;
  /** The Kafka client that keeps the membership (default `'kafkajs'`); see {@link GroupClient}. */
  library?: GroupClient;
  /**
   * Static membership (KIP-345): this process's fixed identity in the group. A process that
   * restarts with the same id within the session timeout gets its partitions back without a
   * rebalance. `'@platformatic/kafka'` only: kafkajs has no static membership.
   */
  instanceId?: string;
}

/**
 * The client a membership runs on: `'kafkajs'` (the default; eager rebalances, no static
 * membership) or `'@platformatic/kafka'` (static membership; needs Node 22.22 or later). Both speak
 * the same assignor, so the members of one group may use either.
 */
export type GroupClient = 'kafkajs' | '@platformatic/kafka';

export const GROUP_CLIENTS: readonly GroupClient[] = ['kafkajs', '@platformatic/kafka'];

/**
 * Joins the group and resolves with the membership once the first assignment has arrived (and
 * `onAssigned` has seen it). Fails with `SOURCE_READ_FAILED` when the group cannot be joined.
 */
export async function joinGroup(options: GroupMembershipOptions): Promise<GroupMembership> {
  const brokers = parseBrokers('group membership', options.brokers);
  if (typeof options.groupId !== 'string' || options.groupId === '') {
    throw invalidArgument('group membership: groupId must be a non-empty string');
  }
  if (options.topics.length === 0) throw invalidArgument('group membership: topics must not be empty');
  const sessionTimeout = options.sessionTimeoutMs ?? 10_000;
  const heartbeatInterval = options.heartbeatIntervalMs ?? Math.max(100, Math.floor(sessionTimeout / 10));
  if (!(heartbeatInterval < sessionTimeout)) {
    throw invalidArgument('group membership: heartbeatIntervalMs must be less than sessionTimeoutMs');
  }
  const library = options.library ?? 'kafkajs';
  if (!GROUP_CLIENTS.includes(library)) {
    throw invalidArgument(
      `group membership: the client must be ${GROUP_CLIENTS.map((c) => `'${c}'`).join(' or ')}, got ${JSON.stringify(library)}`,
    );
  }
  const instanceId = options.instanceId;
  if (instanceId !== undefined && (typeof instanceId !== 'string' || !/^[\w.-]+$/.test(instanceId))) {
    throw invalidArgument(
      `group membership: instanceId must be letters, digits, '.', '_' or '-', got ${JSON.stringify(instanceId)}`,
    );
  }
  const topics = [...new Set(options.topics)];
  const rebalanceTimeout = Math.max(options.rebalanceTimeoutMs ?? sessionTimeout, sessionTimeout);
  if (library === '@platformatic/kafka') {
    return joinWithPlatformatic({
      brokers,
      groupId: options.groupId,
      topics,
      sessionTimeout,
      heartbeatInterval,
      rebalanceTimeout,
      instanceId,
      clientId: options.client?.clientId,
      onAssigned: options.onAssigned,
      onError: options.onError,
    });
  }
  if (instanceId !== undefined) {
    throw invalidArgument(
      "group membership: kafkajs has no static membership; an instanceId needs the '@platformatic/kafka' client",
    );
  }
  const kafka = kafkaClient(brokers, options.client);
  // What this member owns, sent with each join so the assignment can keep it there.
  let owned: readonly TopicPartition[] = [];
  let current: GroupAssignment | null = null;
  let rebalance = 0;
  let consumer: Consumer | null = null;
  let starting: Promise<void> | null = null;
  let leaving = false;
  let failuresInRow = 0;
  let settle: { resolve: () => void; reject: (e: Error) => void } | null = null;
  const first = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  const fail = (error: Error) => {
    if (settle !== null) settle.reject(error);
    else options.onError?.(error);
    settle = null;
  };

  const start = async (): Promise<void> => {
    const c = kafka.consumer({
      groupId: options.groupId,
      sessionTimeout,
      heartbeatInterval,
      rebalanceTimeout,
      // An idle fetch loop (every partition paused) heartbeats once per wait.
      maxWaitTimeInMs: heartbeatInterval,
      partitionAssigners: [stickyAssigner(() => owned)],
      retry: { retries: 5 },
    });
    consumer = c;
    c.on(c.events.GROUP_JOIN, ({ payload }) => {
      // Fetching is the task's business, from its own offsets: pause every topic before the
      // consumer's fetch loop (which starts after this event) asks for anything.
      c.pause(topics.map((topic) => ({ topic })));
      const partitions = Object.entries(payload.memberAssignment)
        .flatMap(([topic, ps]) => ps.map((p): TopicPartition => [topic, p]))
        .sort(([t1, p1], [t2, p2]) => (t1 < t2 ? -1 : t1 > t2 ? 1 : p1 - p2));
      owned = partitions;
      rebalance += 1;
      failuresInRow = 0;
      current = { memberId: payload.memberId, leader: payload.isLeader, partitions, rebalance };
      options.onAssigned(current);
      settle?.resolve();
      settle = null;
    });
    c.on(c.events.CRASH, ({ payload }) => {
      // kafkajs restarts the consumer itself after a retriable error, and has disconnected it
      // after any other. Such an error in the group protocol (a coordinator that answers a late
      // SyncGroup with INVALID_REQUEST, say) is met by joining again as a new member, a few times
      // in a row at most; the member id this one had times out of the group.
      if (payload.restart || leaving) return;
      failuresInRow += 1;
      if (failuresInRow <= MAX_REJOINS) {
        starting = start().catch(fail);
        return;
      }
      fail(
        new MillraceError(
          ErrorCode.SOURCE_READ_FAILED,
          `group ${options.groupId}: membership failed: ${payload.error.message}`,
          { cause: payload.error },
        ),
      );
    });
    await c.connect();
    await c.subscribe({ topics, fromBeginning: false });
    await c.run({
      autoCommit: false,
      eachBatch: async () => {
        // Never called: every partition is paused.
      },
    });
  };

  let left: Promise<void> | null = null;
  const leave = (): Promise<void> => {
    leaving = true;
    left ??= (async () => {
      await starting?.catch(() => {});
      await consumer?.disconnect().catch(() => {});
    })();
    return left;
  };

  return completeJoin(
    options.groupId,
    async () => {
      starting = start();
      await starting;
      await first;
    },
    () => current,
    leave,
  );
}

/** How many times in a row a member joins again after kafkajs gave up on its consumer. */
const MAX_REJOINS = 3;

/** The group's assignor for kafkajs (run by the leader): {@link assignPartitions}. */
function stickyAssigner(owned: () => readonly TopicPartition[]): PartitionAssigner {
  const { AssignerProtocol } = kafkajs();
  return ({ cluster }) => ({
    name: ASSIGNOR_NAME,
    version: ASSIGNOR_VERSION,
    async assign({ members, topics }) {
      const partitions = new Map(
        topics.map((t) => [t, cluster.findTopicPartitionMetadata(t).map((m) => m.partitionId)]),
      );
      const plan = assignPartitions(
        members.map((m) => ({ id: m.memberId, owned: ownedOf(m) })),
        partitions,
      );
      return members.map(({ memberId }) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: ASSIGNOR_VERSION,
          assignment: plan.get(memberId) ?? {},
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return {
        name: ASSIGNOR_NAME,
        metadata: AssignerProtocol.MemberMetadata.encode({
          version: ASSIGNOR_VERSION,
          topics,
          userData: encodeOwned(owned()),
        }),
      };
    },
  });
}

/** The partitions a joining member says it owns; none when its metadata cannot be read. */
function ownedOf(member: GroupMember): TopicPartition[] {
  try {
    const meta = kafkajs().AssignerProtocol.MemberMetadata.decode(member.memberMetadata);
    return meta === null ? [] : decodeOwned(meta.userData);
  } catch {
    return [];
  }
}
