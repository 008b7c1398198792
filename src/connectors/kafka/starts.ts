import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { readCheckedIfExists, writeFileAtomic } from '../../checkpoint/files.js';
import { ErrorCode, MillraceError } from '../../errors.js';
import type { KafkaSourceSpec } from '../spec.js';
import { partitionKey, readFailed } from './reader.js';
import { kafkaReader } from './readers.js';

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
  const reader = kafkaReader({
    brokers: spec.brokers,
    client: spec.client,
    library: spec.library ?? 'kafkajs',
    isolationLevel: spec.isolationLevel,
  });
  const partitions = spec.topicPartitions!.map(([topic, partition]) => ({ topic, partition }));
  try {
    await reader.connect(partitions.map((p) => p.topic));
    const earliest = await reader.listOffsets(partitions, 'earliest');
    const latest = await reader.listOffsets(partitions, 'latest');
    const given = spec.startingOffsets;
    return partitions.map(({ topic: t, partition: p }) => {
      const key = partitionKey(t, p);
      const wanted = given === 'earliest' ? -2 : given === 'latest' ? -1 : (given[t]?.[String(p)] ?? -1);
      if (wanted === -2) return earliest.get(key) ?? 0;
      if (wanted === -1) return latest.get(key) ?? 0;
      return wanted;
    });
  } catch (e) {
    throw readFailed(spec.description, spec.brokers, 'cannot resolve startingOffsets', e);
  } finally {
    await reader.disconnect();
  }
}
