import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { readCheckedIfExists, writeFileAtomic } from '../../checkpoint/files.js';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { KafkaSourceSpec } from '../spec.js';
import { internalCluster, kafkaClient, READ_COMMITTED, READ_UNCOMMITTED } from './client.js';

/** The file in a Kafka source's checkpoint directory that holds where its first run started. */
const START_FILE = 'kafka-start';

/**
 * Where a Kafka source starts on its first run. A checkpoint with a committed epoch says (its
 * offsets), and this is not asked; before that, the source's `startingOffsets` are resolved against
 * the brokers once and recorded in the checkpoint (`sources/<id>/kafka-start`), so a first run that
 * dies before its first commit starts again from the same offsets, not from a later `latest`.
 */
export async function kafkaStartOffsets(spec: KafkaSourceSpec, dir: string | null): Promise<number[]> {
  const recorded = dir === null ? undefined : await readStart(join(dir, START_FILE), spec);
  if (recorded !== undefined) return recorded;
  const offsets = await resolveStart(spec);
  if (dir !== null) {
    await mkdir(dir, { recursive: true });
    const entries = spec.topicPartitions!.map(([t, p], i) => [t, p, offsets[i]]);
    await writeFileAtomic(
      join(dir, START_FILE),
      Buffer.from(`${JSON.stringify({ v: 1, partitions: entries })}\n`),
    );
  }
  return offsets;
}

async function readStart(path: string, spec: KafkaSourceSpec): Promise<number[] | undefined> {
  const bytes = await readCheckedIfExists(path);
  if (bytes === undefined) return undefined;
  const corrupt = (why: string) =>
    new MillraceError(ErrorCode.CHECKPOINT_CORRUPT, `checkpoint file ${path} is corrupt: ${why}`);
  let entries: [string, number, number][];
  try {
    entries = (JSON.parse(bytes.toString()) as { partitions: [string, number, number][] }).partitions;
  } catch (e) {
    throw corrupt((e as Error).message);
  }
  if (!Array.isArray(entries)) throw corrupt('no partitions');
  const at = new Map(entries.map(([t, p, o]) => [`${t}\u0000${p}`, o]));
  // A partition the first run did not have (added since) starts at its beginning.
  return spec.topicPartitions!.map(([t, p]) => at.get(`${t}\u0000${p}`) ?? 0);
}

/** Resolves `startingOffsets` against the brokers: −2 earliest, −1 latest, else the offset given. */
async function resolveStart(spec: KafkaSourceSpec): Promise<number[]> {
  const isolation = spec.isolationLevel === 'read_committed' ? READ_COMMITTED : READ_UNCOMMITTED;
  const cluster = internalCluster(kafkaClient(spec.brokers, spec.client), isolation);
  const partitions = spec.topicPartitions!;
  try {
    await cluster.connect();
    const topics = [...new Set(partitions.map(([t]) => t))];
    await cluster.addMultipleTargetTopics(topics);
    const list = async (fromBeginning: boolean) => {
      const out = new Map<string, number>();
      const res = await cluster.fetchTopicsOffset(
        topics.map((topic) => ({
          topic,
          partitions: partitions.filter(([t]) => t === topic).map(([, partition]) => ({ partition })),
          fromBeginning,
        })),
      );
      for (const t of res)
        for (const p of t.partitions) out.set(`${t.topic}\u0000${p.partition}`, Number(p.offset));
      return out;
    };
    const earliest = await list(true);
    const latest = await list(false);
    const given = spec.startingOffsets;
    return partitions.map(([t, p]) => {
      const key = `${t}\u0000${p}`;
      const wanted = given === 'earliest' ? -2 : given === 'latest' ? -1 : (given[t]?.[String(p)] ?? -1);
      if (wanted === -2) return earliest.get(key) ?? 0;
      if (wanted === -1) return latest.get(key) ?? 0;
      return wanted;
    });
  } catch (e) {
    throw new MillraceError(
      ErrorCode.SOURCE_READ_FAILED,
      `${spec.description}: cannot resolve startingOffsets on ${spec.brokers.join(',')}: ${(e as Error).message}`,
      { cause: e },
    );
  } finally {
    await cluster.disconnect().catch(() => {});
  }
}
