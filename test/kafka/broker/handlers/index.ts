/** Routes each request to its API handler, after checking the version is one the broker advertises. */
import type { Decoder } from '../kafkajs.js';
import { ApiKey, SUPPORTED_VERSIONS } from '../protocol.js';
import type { Connection, HandlerResult, RequestHeader } from '../wire.js';
import {
  apiVersions,
  createTopics,
  deleteRecords,
  deleteTopics,
  findCoordinator,
  listOffsets,
  metadata,
} from './cluster.js';
import type { Context, Handler } from './context.js';
import { fetch, produce } from './data.js';
import {
  describeGroups,
  heartbeat,
  joinGroup,
  leaveGroup,
  listGroups,
  offsetCommit,
  offsetFetch,
  syncGroup,
} from './groups.js';
import { addOffsetsToTxn, addPartitionsToTxn, endTxn, initProducerId, txnOffsetCommit } from './txn.js';

const HANDLERS = new Map<number, Handler>([
  [ApiKey.Produce, produce],
  [ApiKey.Fetch, fetch],
  [ApiKey.ListOffsets, listOffsets],
  [ApiKey.Metadata, metadata],
  [ApiKey.OffsetCommit, offsetCommit],
  [ApiKey.OffsetFetch, offsetFetch],
  [ApiKey.FindCoordinator, findCoordinator],
  [ApiKey.JoinGroup, joinGroup],
  [ApiKey.Heartbeat, heartbeat],
  [ApiKey.LeaveGroup, leaveGroup],
  [ApiKey.SyncGroup, syncGroup],
  [ApiKey.DescribeGroups, describeGroups],
  [ApiKey.ListGroups, listGroups],
  [ApiKey.ApiVersions, apiVersions],
  [ApiKey.CreateTopics, createTopics],
  [ApiKey.DeleteTopics, deleteTopics],
  [ApiKey.DeleteRecords, deleteRecords],
  [ApiKey.InitProducerId, initProducerId],
  [ApiKey.AddPartitionsToTxn, addPartitionsToTxn],
  [ApiKey.AddOffsetsToTxn, addOffsetsToTxn],
  [ApiKey.EndTxn, endTxn],
  [ApiKey.TxnOffsetCommit, txnOffsetCommit],
]);

/**
 * Serves one request. Unknown APIs and unadvertised versions throw, which closes the connection (as
 * Kafka does), except ApiVersions, which answers UNSUPPORTED_VERSION so the client can retry lower.
 */
export function dispatch(
  base: Omit<Context, 'conn' | 'header' | 'version'>,
  conn: Connection,
  header: RequestHeader,
  body: Decoder,
): HandlerResult | Promise<HandlerResult> {
  const handler = HANDLERS.get(header.apiKey);
  const range = SUPPORTED_VERSIONS.get(header.apiKey);
  if (!handler || !range) throw new Error(`unsupported API key ${header.apiKey}`);
  const supported = header.apiVersion >= range[0] && header.apiVersion <= range[1];
  if (!supported && header.apiKey !== ApiKey.ApiVersions) {
    throw new Error(`unsupported version ${header.apiVersion} of API ${header.apiKey}`);
  }
  return handler({ ...base, conn, header, version: header.apiVersion }, body);
}
