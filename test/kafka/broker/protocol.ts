/**
 * Protocol constants: API keys, the versions this broker advertises (and implements: every version in
 * each range), and the error codes it answers with.
 *
 * Only non-flexible versions are advertised, so request headers are v1 and response headers v0 for every
 * API. kafkajs always uses the highest version it shares with the broker; librdkafka intersects ranges.
 * librdkafka opens with ApiVersions v3; like Kafka, the broker answers an unsupported ApiVersions
 * version with UNSUPPORTED_VERSION in the v0 layout, and librdkafka retries with v0.
 */
export const ApiKey = {
  Produce: 0,
  Fetch: 1,
  ListOffsets: 2,
  Metadata: 3,
  OffsetCommit: 8,
  OffsetFetch: 9,
  FindCoordinator: 10,
  JoinGroup: 11,
  Heartbeat: 12,
  LeaveGroup: 13,
  SyncGroup: 14,
  DescribeGroups: 15,
  ListGroups: 16,
  ApiVersions: 18,
  CreateTopics: 19,
  DeleteTopics: 20,
  DeleteRecords: 21,
  InitProducerId: 22,
  AddPartitionsToTxn: 24,
  AddOffsetsToTxn: 25,
  EndTxn: 26,
  TxnOffsetCommit: 28,
} as const;

/** Advertised [min, max] per API key. */
export const SUPPORTED_VERSIONS: ReadonlyMap<number, readonly [number, number]> = new Map([
  [ApiKey.Produce, [3, 7]], // v3: record batches (magic 2) and transactional id
  [ApiKey.Fetch, [4, 11]], // v4: isolation level, last stable offset, aborted transactions
  [ApiKey.ListOffsets, [1, 3]], // v2: isolation level
  [ApiKey.Metadata, [1, 6]],
  [ApiKey.OffsetCommit, [2, 5]],
  [ApiKey.OffsetFetch, [1, 4]],
  [ApiKey.FindCoordinator, [0, 2]], // v1: transaction coordinators
  [ApiKey.JoinGroup, [0, 5]],
  [ApiKey.Heartbeat, [0, 3]],
  [ApiKey.LeaveGroup, [0, 3]],
  [ApiKey.SyncGroup, [0, 3]],
  [ApiKey.DescribeGroups, [0, 2]],
  [ApiKey.ListGroups, [0, 2]],
  [ApiKey.ApiVersions, [0, 2]],
  [ApiKey.CreateTopics, [0, 3]],
  [ApiKey.DeleteTopics, [0, 1]],
  [ApiKey.DeleteRecords, [0, 1]],
  [ApiKey.InitProducerId, [0, 1]],
  [ApiKey.AddPartitionsToTxn, [0, 1]],
  [ApiKey.AddOffsetsToTxn, [0, 1]],
  [ApiKey.EndTxn, [0, 1]],
  [ApiKey.TxnOffsetCommit, [0, 1]],
]);

/** Kafka error codes used by the broker (names as in Kafka's Errors enum). */
export const ErrorCode = {
  NONE: 0,
  OFFSET_OUT_OF_RANGE: 1,
  CORRUPT_MESSAGE: 2,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  ILLEGAL_GENERATION: 22,
  INCONSISTENT_GROUP_PROTOCOL: 23,
  UNKNOWN_MEMBER_ID: 25,
  REBALANCE_IN_PROGRESS: 27,
  UNSUPPORTED_VERSION: 35,
  TOPIC_ALREADY_EXISTS: 36,
  INVALID_PARTITIONS: 37,
  UNSUPPORTED_FOR_MESSAGE_FORMAT: 43,
  OUT_OF_ORDER_SEQUENCE_NUMBER: 45,
  /** Kafka's answer to a stale epoch for these (pre-PRODUCER_FENCED) request versions. */
  INVALID_PRODUCER_EPOCH: 47,
  INVALID_TXN_STATE: 48,
  INVALID_PRODUCER_ID_MAPPING: 49,
} as const;

/** Fetch/ListOffsets isolation levels. */
export type Isolation = 'read_uncommitted' | 'read_committed';
export const isolationOf = (level: number): Isolation =>
  level === 1 ? 'read_committed' : 'read_uncommitted';
