/**
 * Group coordinator: consumer-group membership (join / sync barrier, heartbeats, session expiry, leave)
 * and committed offsets. Follows Kafka's state machine closely enough for kafkajs and librdkafka:
 * Empty -> PreparingRebalance (waiting for every member to (re)join) -> CompletingRebalance (waiting
 * for the leader's assignment) -> Stable. A static member (one with a group instance id) that rejoins
 * under a new member id replaces its old self without a rebalance.
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode } from './protocol.js';

export type GroupStateName = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead';

export interface JoinRequest {
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocolType: string;
  protocols: { name: string; metadata: Buffer }[];
}

export interface JoinResult {
  error: number;
  generation: number;
  protocol: string | null;
  leader: string;
  memberId: string;
  /** Every member's metadata for the chosen protocol; only the leader gets it. */
  members: { memberId: string; groupInstanceId: string | null; metadata: Buffer }[];
}

export interface CommittedOffset {
  offset: number;
  metadata: string | null;
}

interface Member extends JoinRequest {
  assignment: Buffer;
  awaitingJoin?: (result: JoinResult) => void;
  awaitingSync?: (result: { error: number; assignment: Buffer }) => void;
  sessionTimer?: NodeJS.Timeout;
}

export class Group {
  state: GroupStateName = 'Empty';
  generation = 0;
  protocolType: string | null = null;
  protocol: string | null = null;
  leader: string | null = null;
  readonly members = new Map<string, Member>();
  /** topic -> partition -> committed offset. */
  readonly offsets = new Map<string, Map<number, CommittedOffset>>();
  rebalanceTimer: NodeJS.Timeout | undefined;

  constructor(readonly id: string) {}
}

const EMPTY = Buffer.alloc(0);

export class GroupCoordinator {
  private readonly groups = new Map<string, Group>();

  group(id: string): Group {
    let group = this.groups.get(id);
    if (!group) this.groups.set(id, (group = new Group(id)));
    return group;
  }

  find(id: string): Group | undefined {
    return this.groups.get(id);
  }

  all(): Iterable<Group> {
    return this.groups.values();
  }

  /** JoinGroup: resolves once every member has (re)joined, or the rebalance timeout dropped the rest. */
  join(groupId: string, req: JoinRequest): Promise<JoinResult> {
    const group = this.group(groupId);
    const fail = (error: number): Promise<JoinResult> =>
      Promise.resolve({
        error,
        generation: -1,
        protocol: null,
        leader: '',
        memberId: req.memberId,
        members: [],
      });
    if (req.memberId !== '' && !group.members.has(req.memberId)) return fail(ErrorCode.UNKNOWN_MEMBER_ID);
    if (group.members.size > 0 && group.protocolType !== req.protocolType) {
      return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    }
    const replaced = this.replaceStaticMember(group, req);
    if (replaced !== null) return Promise.resolve(replaced);
    const memberId = req.memberId || `${req.clientId}-${randomUUID()}`;
    const previous = group.members.get(memberId);
    clearTimeout(previous?.sessionTimer);
    const member: Member = { ...req, memberId, assignment: previous?.assignment ?? EMPTY };
    group.members.set(memberId, member);
    group.protocolType = req.protocolType;
    const joined = new Promise<JoinResult>((resolve) => (member.awaitingJoin = resolve));
    this.prepareRebalance(group);
    this.tryCompleteJoin(group);
    return joined;
  }

  /**
   * Static membership (KIP-345): a new member id joining a stable group under the instance id of a
   * member already there takes that member's place — its assignment, its leadership — without a
   * rebalance; the old member id is fenced. Null when the join is not such a replacement.
   */
  private replaceStaticMember(group: Group, req: JoinRequest): JoinResult | null {
    if (req.memberId !== '' || req.groupInstanceId === null || group.state !== 'Stable') return null;
    const old = [...group.members.values()].find((m) => m.groupInstanceId === req.groupInstanceId);
    if (old === undefined) return null;
    clearTimeout(old.sessionTimer);
    group.members.delete(old.memberId);
    const memberId = `${req.clientId}-${randomUUID()}`;
    const member: Member = { ...req, memberId, assignment: old.assignment };
    group.members.set(memberId, member);
    if (group.leader === old.memberId) group.leader = memberId;
    this.touch(group, member);
    return {
      error: ErrorCode.NONE,
      generation: group.generation,
      protocol: group.protocol,
      leader: group.leader!,
      memberId,
      members: [],
    };
  }

  /** SyncGroup: the leader hands out assignments; followers wait for them. */
  sync(
    groupId: string,
    generation: number,
    memberId: string,
    assignments: Map<string, Buffer>,
  ): Promise<{ error: number; assignment: Buffer }> {
    const group = this.groups.get(groupId);
    const member = group?.members.get(memberId);
    const fail = (error: number) => Promise.resolve({ error, assignment: EMPTY });
    if (!group || !member) return fail(ErrorCode.UNKNOWN_MEMBER_ID);
    if (generation !== group.generation) return fail(ErrorCode.ILLEGAL_GENERATION);
    if (group.state === 'PreparingRebalance') return fail(ErrorCode.REBALANCE_IN_PROGRESS);
    this.touch(group, member);
    if (group.state === 'Stable')
      return Promise.resolve({ error: ErrorCode.NONE, assignment: member.assignment });
    const synced = new Promise<{ error: number; assignment: Buffer }>(
      (resolve) => (member.awaitingSync = resolve),
    );
    if (memberId === group.leader) {
      group.state = 'Stable';
      for (const m of group.members.values()) {
        m.assignment = assignments.get(m.memberId) ?? EMPTY;
        m.awaitingSync?.({ error: ErrorCode.NONE, assignment: m.assignment });
        m.awaitingSync = undefined;
      }
    }
    return synced;
  }

  heartbeat(groupId: string, generation: number, memberId: string): number {
    const group = this.groups.get(groupId);
    const member = group?.members.get(memberId);
    if (!group || !member) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (generation !== group.generation) return ErrorCode.ILLEGAL_GENERATION;
    this.touch(group, member);
    return group.state === 'PreparingRebalance' ? ErrorCode.REBALANCE_IN_PROGRESS : ErrorCode.NONE;
  }

  /** LeaveGroup: removes the member and rebalances the rest. */
  leave(groupId: string, memberId: string): number {
    const group = this.groups.get(groupId);
    if (!group?.members.has(memberId)) return ErrorCode.UNKNOWN_MEMBER_ID;
    this.remove(group, memberId);
    return ErrorCode.NONE;
  }

  /**
   * Checks an OffsetCommit's member and generation. A generation below 0 (an admin or standalone
   * consumer commit) is accepted as Kafka does for groups without members.
   */
  validateCommit(groupId: string, generation: number, memberId: string): number {
    if (generation < 0) return ErrorCode.NONE;
    const group = this.groups.get(groupId);
    const member = group?.members.get(memberId);
    if (!group || !member) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (generation !== group.generation) return ErrorCode.ILLEGAL_GENERATION;
    if (group.state === 'CompletingRebalance') return ErrorCode.REBALANCE_IN_PROGRESS;
    this.touch(group, member);
    return ErrorCode.NONE;
  }

  commit(groupId: string, topic: string, partition: number, offset: CommittedOffset): void {
    const offsets = this.group(groupId).offsets;
    let partitions = offsets.get(topic);
    if (!partitions) offsets.set(topic, (partitions = new Map()));
    partitions.set(partition, offset);
  }

  committed(groupId: string, topic: string, partition: number): CommittedOffset | undefined {
    return this.groups.get(groupId)?.offsets.get(topic)?.get(partition);
  }

  /** Stops every timer (broker close); membership is kept across stop/start. */
  close(): void {
    for (const group of this.groups.values()) {
      clearTimeout(group.rebalanceTimer);
      for (const m of group.members.values()) clearTimeout(m.sessionTimer);
    }
  }

  private prepareRebalance(group: Group): void {
    if (group.state === 'PreparingRebalance') return;
    group.state = 'PreparingRebalance';
    for (const m of group.members.values()) {
      m.awaitingSync?.({ error: ErrorCode.REBALANCE_IN_PROGRESS, assignment: EMPTY });
      m.awaitingSync = undefined;
    }
    const timeout = Math.max(0, ...[...group.members.values()].map((m) => m.rebalanceTimeoutMs));
    group.rebalanceTimer = setTimeout(() => {
      // Members that did not rejoin in time are dropped, and the rebalance completes without them.
      for (const m of [...group.members.values()]) if (!m.awaitingJoin) this.dropMember(group, m.memberId);
      this.completeJoin(group);
    }, timeout);
    group.rebalanceTimer.unref();
  }

  private tryCompleteJoin(group: Group): void {
    if (group.state !== 'PreparingRebalance') return;
    if ([...group.members.values()].every((m) => m.awaitingJoin)) this.completeJoin(group);
  }

  private completeJoin(group: Group): void {
    clearTimeout(group.rebalanceTimer);
    group.rebalanceTimer = undefined;
    const members = [...group.members.values()];
    if (members.length === 0) {
      Object.assign(group, { state: 'Empty', leader: null, protocol: null });
      return;
    }
    group.generation++;
    group.state = 'CompletingRebalance';
    const supportedByAll = (name: string) => members.every((m) => m.protocols.some((p) => p.name === name));
    group.protocol = members[0]!.protocols.find((p) => supportedByAll(p.name))?.name ?? null;
    if (!group.leader || !group.members.has(group.leader)) group.leader = members[0]!.memberId;
    const metadata = members.map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      metadata: m.protocols.find((p) => p.name === group.protocol)?.metadata ?? EMPTY,
    }));
    for (const m of members) {
      const resolve = m.awaitingJoin;
      m.awaitingJoin = undefined;
      this.touch(group, m);
      resolve?.({
        error: ErrorCode.NONE,
        generation: group.generation,
        protocol: group.protocol,
        leader: group.leader,
        memberId: m.memberId,
        members: m.memberId === group.leader ? metadata : [],
      });
    }
  }

  /** Restarts the member's session timeout: if it expires, the member is removed. */
  private touch(group: Group, member: Member): void {
    clearTimeout(member.sessionTimer);
    member.sessionTimer = setTimeout(() => this.remove(group, member.memberId), member.sessionTimeoutMs);
    member.sessionTimer.unref();
  }

  private remove(group: Group, memberId: string): void {
    this.dropMember(group, memberId);
    if (group.members.size === 0) {
      clearTimeout(group.rebalanceTimer);
      Object.assign(group, { state: 'Empty', leader: null, protocol: null, rebalanceTimer: undefined });
      return;
    }
    this.prepareRebalance(group);
    this.tryCompleteJoin(group);
  }

  private dropMember(group: Group, memberId: string): void {
    const member = group.members.get(memberId);
    if (!member) return;
    clearTimeout(member.sessionTimer);
    member.awaitingJoin?.({
      error: ErrorCode.UNKNOWN_MEMBER_ID,
      generation: -1,
      protocol: null,
      leader: '',
      memberId,
      members: [],
    });
    member.awaitingSync?.({ error: ErrorCode.UNKNOWN_MEMBER_ID, assignment: EMPTY });
    group.members.delete(memberId);
  }
}
