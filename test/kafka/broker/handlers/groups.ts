/**
 * Consumer-group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
 * DescribeGroups, ListGroups.
 */
import { Encoder } from '../kafkajs.js';
import { ErrorCode } from '../protocol.js';
import { readLong, readNullableArray, throttle, writeArray } from '../wire.js';
import type { Handler } from './context.js';

/** JoinGroup v0-5. */
export const joinGroup: Handler = async ({ state, version, header, conn }, d) => {
  const groupId = d.readString()!;
  const sessionTimeoutMs = d.readInt32();
  const rebalanceTimeoutMs = version >= 1 ? d.readInt32() : sessionTimeoutMs;
  const memberId = d.readString() ?? '';
  const groupInstanceId = version >= 5 ? d.readString() : null;
  const protocolType = d.readString()!;
  const protocols = d.readArray((p) => ({
    name: p.readString()!,
    metadata: p.readBytes() ?? Buffer.alloc(0),
  }));
  const result = await state.groups.join(groupId, {
    memberId,
    groupInstanceId,
    clientId: header.clientId ?? '',
    clientHost: `/${conn.socket.remoteAddress ?? '127.0.0.1'}`,
    sessionTimeoutMs,
    rebalanceTimeoutMs,
    protocolType,
    protocols,
  });
  const enc = throttle(new Encoder(), version >= 2)
    .writeInt16(result.error)
    .writeInt32(result.generation);
  enc.writeString(result.protocol).writeString(result.leader).writeString(result.memberId);
  return writeArray(enc, result.members, (e, m) => {
    e.writeString(m.memberId);
    if (version >= 5) e.writeString(m.groupInstanceId);
    e.writeBytes(m.metadata);
  });
};

/** SyncGroup v0-3. */
export const syncGroup: Handler = async ({ state, version }, d) => {
  const groupId = d.readString()!;
  const generation = d.readInt32();
  const memberId = d.readString()!;
  if (version >= 3) d.readString();
  const assignments = new Map(
    d.readArray((a) => [a.readString()!, a.readBytes() ?? Buffer.alloc(0)] as const),
  );
  const { error, assignment } = await state.groups.sync(groupId, generation, memberId, assignments);
  return throttle(new Encoder(), version >= 1)
    .writeInt16(error)
    .writeBytes(assignment);
};

/** Heartbeat v0-3. */
export const heartbeat: Handler = ({ state, version }, d) => {
  const groupId = d.readString()!;
  const generation = d.readInt32();
  const memberId = d.readString()!;
  const error = state.groups.heartbeat(groupId, generation, memberId);
  return throttle(new Encoder(), version >= 1).writeInt16(error);
};

/** LeaveGroup v0-3 (v3 leaves several members at once). */
export const leaveGroup: Handler = ({ state, version }, d) => {
  const groupId = d.readString()!;
  if (version < 3) {
    const error = state.groups.leave(groupId, d.readString()!);
    return throttle(new Encoder(), version >= 1).writeInt16(error);
  }
  const members = d.readArray((m) => ({ memberId: m.readString()!, groupInstanceId: m.readString() }));
  const enc = throttle(new Encoder(), true).writeInt16(ErrorCode.NONE);
  return writeArray(enc, members, (e, m) =>
    e
      .writeString(m.memberId)
      .writeString(m.groupInstanceId)
      .writeInt16(state.groups.leave(groupId, m.memberId)),
  );
};

/** OffsetCommit v2-5 (v2-4 carry a retention time, which is ignored: offsets never expire). */
export const offsetCommit: Handler = ({ state, version }, d) => {
  const groupId = d.readString()!;
  const generation = d.readInt32();
  const memberId = d.readString()!;
  if (version <= 4) d.readInt64();
  const topics = d.readArray((t) => ({
    name: t.readString()!,
    partitions: t.readArray((p) => ({
      partition: p.readInt32(),
      offset: readLong(p),
      metadata: p.readString(),
    })),
  }));
  const error = state.groups.validateCommit(groupId, generation, memberId);
  return writeArray(throttle(new Encoder(), version >= 3), topics, (e, { name, partitions }) => {
    writeArray(e.writeString(name), partitions, (p, { partition, offset, metadata }) => {
      if (error === ErrorCode.NONE) state.groups.commit(groupId, name, partition, { offset, metadata });
      p.writeInt32(partition).writeInt16(error);
    });
  });
};

/** OffsetFetch v1-4 (v2+: a null topic list asks for every committed offset of the group). */
export const offsetFetch: Handler = ({ state, version }, d) => {
  const groupId = d.readString()!;
  const requested = readNullableArray(d, (t) => ({
    name: t.readString()!,
    partitions: t.readArray((p) => p.readInt32()),
  }));
  const offsets = state.groups.find(groupId)?.offsets;
  const topics =
    requested ??
    [...(offsets?.entries() ?? [])].map(([name, partitions]) => ({
      name,
      partitions: [...partitions.keys()],
    }));
  const enc = writeArray(throttle(new Encoder(), version >= 3), topics, (e, { name, partitions }) => {
    writeArray(e.writeString(name), partitions, (p, partition) => {
      const committed = state.groups.committed(groupId, name, partition);
      p.writeInt32(partition)
        .writeInt64(committed?.offset ?? -1)
        .writeString(committed?.metadata ?? '');
      p.writeInt16(ErrorCode.NONE);
    });
  });
  return version >= 2 ? enc.writeInt16(ErrorCode.NONE) : enc;
};

/** DescribeGroups v0-2: an unknown group is reported as Dead, as Kafka does. */
export const describeGroups: Handler = ({ state, version }, d) => {
  const ids = d.readArray((r) => r.readString()!);
  return writeArray(throttle(new Encoder(), version >= 1), ids, (e, id) => {
    const group = state.groups.find(id);
    e.writeInt16(ErrorCode.NONE)
      .writeString(id)
      .writeString(group?.state ?? 'Dead');
    e.writeString(group?.protocolType ?? '').writeString(group?.protocol ?? '');
    writeArray(e, group?.members.values() ?? [], (m, member) => {
      const metadata = member.protocols.find((p) => p.name === group?.protocol)?.metadata ?? Buffer.alloc(0);
      m.writeString(member.memberId).writeString(member.clientId).writeString(member.clientHost);
      m.writeBytes(metadata).writeBytes(member.assignment);
    });
  });
};

/** ListGroups v0-2. */
export const listGroups: Handler = ({ state, version }) => {
  const enc = throttle(new Encoder(), version >= 1).writeInt16(ErrorCode.NONE);
  return writeArray(enc, state.groups.all(), (e, g) => e.writeString(g.id).writeString(g.protocolType ?? ''));
};
