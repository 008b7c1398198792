import { ErrorCode, MillraceError } from '../../errors.js';
import type { SinkConnector, SourceConnector, TaskDecoder } from '../contract.js';
import type { KafkaSinkSpec, KafkaSourceSpec } from '../spec.js';
import { WATERMARK_FROM_HEADER, WATERMARK_HEADER } from './codec.js';
import { KafkaDeadLetterWriter } from './dead-letters.js';
import { kafkaGroupShare } from './group-share.js';
import { resolveKafkaLayout } from './layout.js';
import { allCommitted, KafkaSinkRuntime } from './sink-runtime.js';
import type { RawKafkaRecord } from './source.js';
import { KafkaSourceFeed } from './source-feed.js';
import { kafkaStartOffsets } from './starts.js';

/**
 * Records of a subscription's topic-partitions (resolved from the brokers at start), fetched by the
 * driver as bytes and decoded in the source tasks; records that do not decode may go to a
 * dead-letter topic.
 */
export const kafkaSourceConnector: SourceConnector<KafkaSourceSpec> = {
  feed: (spec, context) => new KafkaSourceFeed(spec, context),
  decoder: (spec, onBadRecord) => {
    const topic = spec.deadLetterTopic;
    const letters =
      topic !== undefined && onBadRecord === 'deadLetter'
        ? new KafkaDeadLetterWriter({ ...spec, deadLetterTopic: topic })
        : null;
    const decoder: TaskDecoder = {
      decode: (raw) => spec.decode(raw as RawKafkaRecord),
      close: () => void letters?.close(),
    };
    if (letters !== null) decoder.deadLetter = (raw, error) => letters.write(raw as RawKafkaRecord, error);
    const records = spec.watermarkRecords;
    if (records !== undefined) decoder.watermark = watermarkRecords(records.senders, records.idleMs);
    return decoder;
  },
  layout: {
    pending: (spec) => (spec.topicPartitions === undefined ? spec.layoutKey : undefined),
    resolve: resolveKafkaLayout,
  },
  startOffsets: kafkaStartOffsets,
  group: kafkaGroupShare,
};

/**
 * Reads a repartition topic's watermark records: each upstream task's latest, and the least of
 * them once every one of the `senders` has written (−∞ before: one not heard from holds it back).
 * A row before an upstream task's record came before its watermark, so no row of any upstream
 * task is late by the least of them unless it was late by its own task's watermark. With an
 * `idleMs` (the watermark's `idleTimeout`), the tasks still silent that long after the first
 * record are left out, until they write.
 */
function watermarkRecords(
  senders: number,
  idleMs: number | undefined,
): (raw: unknown, now: number) => number | undefined {
  const heard = new Map<string, number>();
  let first = Number.NaN;
  return (raw, now) => {
    const headers = (raw as RawKafkaRecord).headers;
    const value = headers[WATERMARK_HEADER];
    if (value === undefined) return undefined;
    if (Number.isNaN(first)) first = now;
    const from = headers[WATERMARK_FROM_HEADER] ?? '';
    heard.set(from, Math.max(heard.get(from) ?? Number.NEGATIVE_INFINITY, Number(value)));
    const idle = idleMs !== undefined && now - first >= idleMs;
    return heard.size < senders && !idle ? Number.NEGATIVE_INFINITY : Math.min(...heard.values());
  };
}

/** Each sink partition's own producer; exactly-once: one transaction per epoch, committed by the driver's word. */
export const kafkaSinkConnector: SinkConnector<KafkaSinkSpec> = {
  writer: (spec, context) =>
    new KafkaSinkRuntime(spec, context.partition, context.queryId, context.firstEpoch, context.task),
  // An exactly-once sink's partitions commit their transactions once the epoch is logged.
  committer: (spec, _mode, commitOnHosts) =>
    spec.exactlyOnce ? { commit: (epoch) => commitOnHosts(epoch) } : null,
  hasCommitted: (spec, epoch, context) =>
    spec.exactlyOnce ? allCommitted(spec, epoch, context) : Promise.resolve(false),
  refusesAsyncProgress: (spec) =>
    spec.exactlyOnce
      ? 'asyncProgressTracking cannot be used with an exactly-once sinks.kafka: its transactions recognise a ' +
        'redone epoch by its number, and a restart would redo epochs whose commit was not logged, cut ' +
        'differently; turn asyncProgressTracking off, or exactlyOnce'
      : undefined,
  // Real-time mode: the brokers must not time a transaction out before its epoch ends.
  checkTrigger: (spec, checkpointIntervalMs) => {
    if (!spec.exactlyOnce || checkpointIntervalMs === null) return;
    if (checkpointIntervalMs < spec.transactionTimeoutMs) return;
    throw new MillraceError(
      ErrorCode.INVALID_ARGUMENT,
      `sinks.kafka: exactlyOnce writes each epoch in one transaction, and the checkpoint interval ` +
        `(${checkpointIntervalMs} ms) is not below transactionTimeoutMs (${spec.transactionTimeoutMs} ms): ` +
        'the brokers would abort the transactions; shorten Trigger.realTime(interval) or raise transactionTimeoutMs ' +
        "(at most the brokers' transaction.max.timeout.ms, 15 minutes by default)",
    );
  },
};
