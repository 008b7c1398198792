import { consoleSink } from './console/sink.js';
import { filesSink } from './files/sink.js';
import { filesSource } from './files/source.js';
import { foreachBatchSink } from './foreach/batch.js';
import { foreachSink } from './foreach/sink.js';
import { generatorSource } from './generator/source.js';
import { kafkaSink } from './kafka/sink.js';
import { kafkaSource } from './kafka/source.js';
import { memorySink } from './memory/sink.js';
import { memorySource } from './memory/source.js';
import { rateSource } from './rate/source.js';

/** The list of sources. Each is a function returning a frozen spec. */
export const sources = Object.freeze({
  memory: memorySource,
  rate: rateSource,
  generator: generatorSource,
  files: filesSource,
  kafka: kafkaSource,
});

/** The list of sinks. */
export const sinks = Object.freeze({
  memory: memorySink,
  console: consoleSink,
  foreach: foreachSink,
  foreachBatch: foreachBatchSink,
  files: filesSink,
  kafka: kafkaSink,
});

export type { ConsoleSinkOptions } from './console/sink.js';
export { readFilesSinkOutput } from './files/manifest.js';
export type { FilesSinkOptions } from './files/sink.js';
export type { FilesSourceOptions } from './files/source.js';
export type { GeneratorSourceOptions } from './generator/source.js';
export type { KafkaOutputRow, KafkaPartitioner, KafkaSinkOptions } from './kafka/sink.js';
export type { KafkaRow, KafkaSourceOptions } from './kafka/source.js';
export type { MemorySinkOptions } from './memory/sink.js';
export type { MemorySourceOptions } from './memory/source.js';
export type { RateRow, RateSourceOptions } from './rate/source.js';
export type { ForeachWriter, SinkSpec, SourceSpec } from './spec.js';
