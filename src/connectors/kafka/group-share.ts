import type { GroupShare } from '../contract.js';
import type { KafkaSourceSpec } from '../spec.js';
import { type GroupClient, joinGroup } from './group-membership.js';
import { ensureRepartitionTopic, repartitionEnds } from './repartition.js';

const partitionsOf = (spec: KafkaSourceSpec) => spec.topicPartitions ?? [];

/**
 * Kafka sources shared by a consumer group: task p is partition p of every topic the job reads,
 * and the group's members are given tasks by `joinGroup`'s sticky assignor.
 */
export const kafkaGroupShare: GroupShare<KafkaSourceSpec> = {
  cluster: (spec) => [...spec.brokers].sort().join(','),
  topics: (spec) => [...new Set(partitionsOf(spec).map(([topic]) => topic))],
  tasks: (spec) => partitionsOf(spec).map(([, partition]) => partition),
  taskLayout: (spec, task) => ({
    key: spec.layoutKey,
    layout: partitionsOf(spec).filter(([, partition]) => partition === task),
  }),
  repartition: repartitionEnds,
  ensureRepartition: ensureRepartitionTopic,
  join: async (specs, options) => {
    const first = specs[0]!;
    const membership = await joinGroup({
      brokers: first.brokers,
      groupId: options.groupId,
      topics: [
        ...new Set([...specs.flatMap((s) => kafkaGroupShare.topics(s)), ...options.extraTopics]),
      ].sort(),
      sessionTimeoutMs: options.sessionTimeoutMs,
      client: first.client,
      library: options.client as GroupClient | undefined,
      instanceId: options.instanceId,
      onAssigned: (a) =>
        options.onAssigned({ memberId: a.memberId, tasks: [...new Set(a.partitions.map(([, p]) => p))] }),
      onError: options.onError,
    });
    return { leave: () => membership.leave() };
  },
};
