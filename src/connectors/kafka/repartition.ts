import { ErrorCode, MillraceError } from '../../errors.js';
import type { RepartitionStage } from '../contract.js';
import type { KafkaSourceSpec, SinkSpec, SourceSpec } from '../spec.js';
import { kafkaClient } from './client.js';
import { kafkaSink } from './sink.js';
import { kafkaSource } from './source.js';

/**
 * The two ends of a repartition topic between the stages of a group's plan (docs/scale-out.md,
 * "Cutting the plan"): the upstream task writes whole rows as msgpack values to the partition of
 * their key, transactionally when the job's own sink is exactly-once (so a redone upstream epoch
 * is never read twice); the downstream task of partition p reads partition p from the earliest
 * offset, `read_committed`. With the rows, at each epoch's end, the upstream task writes its
 * watermark to every partition ({@link WATERMARK_HEADER}), which the downstream tasks take as a
 * watermark of the input declared again above the cut.
 */
export function repartitionEnds(
  spec: KafkaSourceSpec,
  stage: RepartitionStage,
): { readonly sink: SinkSpec; readonly source: SourceSpec } {
  const user = stage.sink.kind === 'kafka' ? stage.sink : undefined;
  const sink = kafkaSink({
    brokers: [...spec.brokers],
    topic: stage.topic,
    value: 'msgpack',
    // The next stage measures latency from the row's first source, not from this write.
    timestamp: 'source',
    exactlyOnce: user?.exactlyOnce ?? false,
    idempotent: user?.idempotent ?? true,
    ...(user !== undefined ? { transactionTimeoutMs: user.transactionTimeoutMs } : {}),
    client: spec.client,
  });
  const source = kafkaSource({
    name: 'repartition',
    brokers: [...spec.brokers],
    topic: stage.topic,
    startingOffsets: 'earliest',
    value: 'msgpack',
    valueOnly: true,
    isolationLevel: 'read_committed',
    fetchMaxWait: spec.fetchMaxWaitMs,
    fetchMaxBytes: spec.fetchMaxBytes,
    client: spec.client,
  });
  return {
    sink: Object.freeze({
      ...sink,
      ...(stage.watermarkInput === null
        ? {}
        : { watermarkPartitions: stage.partitions, watermarkInput: stage.watermarkInput }),
    }),
    source: Object.freeze({
      ...source,
      topicPartitions: [[stage.topic, stage.task] as const],
      partitions: 1,
      watermarkRecords: Object.freeze({ senders: stage.partitions, idleMs: stage.watermarkIdleMs }),
    }),
  };
}

/**
 * Creates the repartition topic with `partitions` partitions (Kafka's admin API), or checks the
 * one already there has as many. A cluster without the admin call needs it made beforehand.
 */
export async function ensureRepartitionTopic(
  spec: KafkaSourceSpec,
  topic: string,
  partitions: number,
): Promise<void> {
  const admin = kafkaClient(spec.brokers, spec.client).admin();
  const where = `the repartition topic ${topic} on ${spec.brokers.join(',')}`;
  try {
    await admin.connect();
    if (!(await admin.listTopics()).includes(topic)) {
      try {
        await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: partitions }] });
      } catch (e) {
        throw new MillraceError(
          ErrorCode.SOURCE_READ_FAILED,
          `cannot create ${where} (${partitions} partitions): ${(e as Error).message}; ` +
            'create it beforehand where the cluster has no admin API',
          { cause: e },
        );
      }
    }
    const [found] = (await admin.fetchTopicMetadata({ topics: [topic] })).topics;
    const has = found?.partitions.length ?? 0;
    if (has !== partitions) {
      throw new MillraceError(
        ErrorCode.CHECKPOINT_INCOMPATIBLE_CHANGE,
        `${where} has ${has} partitions, and the group's sources have ${partitions}: ` +
          'each task of the next stage reads the partition of the same number',
      );
    }
  } catch (e) {
    if (e instanceof MillraceError) throw e;
    throw new MillraceError(ErrorCode.SOURCE_READ_FAILED, `cannot reach ${where}: ${(e as Error).message}`, {
      cause: e,
    });
  } finally {
    await admin.disconnect().catch(() => {});
  }
}
