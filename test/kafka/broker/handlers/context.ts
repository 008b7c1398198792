/** What every API handler gets: the broker's state, the connection and the request being served. */
import type { Decoder } from '../kafkajs.js';
import type { BrokerState } from '../state.js';
import type { Connection, HandlerResult, RequestHeader } from '../wire.js';

/** Fault-injection switches the handlers consult. */
export interface Faults {
  /** Produce requests still to be appended but answered by closing the connection. */
  lostProduceAcks: number;
  /** Transaction commits still to be refused as if their transaction had timed out first. */
  expiredTxnCommits: number;
  /** Transaction-coordinator lookups (FindCoordinator, key type 1) still to be answered by closing the connection. */
  droppedTxnCoordinatorLookups: number;
}

export interface Context {
  state: BrokerState;
  conn: Connection;
  header: RequestHeader;
  version: number;
  /** Where clients reach this broker (Metadata, FindCoordinator). */
  host: string;
  port: number;
  faults: Faults;
}

export type Handler = (ctx: Context, body: Decoder) => HandlerResult | Promise<HandlerResult>;

/** The single broker's node id: leader of every partition, controller and every coordinator. */
export const NODE_ID = 1;
