import { consoleSinkConnector } from './console/connector.js';
import type {
  GeneratedRows,
  SinkConnector,
  SinkRegistry,
  SourceConnector,
  SourceRegistry,
} from './contract.js';
import { filesSinkConnector, filesSourceConnector } from './files/connector.js';
import { foreachBatchSinkConnector, foreachSinkConnector } from './foreach/connector.js';
import { generatorSourceConnector } from './generator/connector.js';
import { kafkaSinkConnector, kafkaSourceConnector } from './kafka/connector.js';
import { memorySinkConnector, memorySourceConnector } from './memory/connector.js';
import { rateSourceConnector } from './rate/connector.js';
import type { SinkKind, SinkSpec, SourceKind, SourceSpec } from './spec.js';

/**
 * Every source kind's connector. The engine asks these for everything that differs between
 * sources; a kind missing here does not compile. Adding a source is a folder and a line here.
 */
export const sourceConnectors: SourceRegistry = Object.freeze({
  memory: memorySourceConnector,
  rate: rateSourceConnector,
  generator: generatorSourceConnector,
  files: filesSourceConnector,
  kafka: kafkaSourceConnector,
});

/** Every sink kind's connector (see {@link sourceConnectors}). */
export const sinkConnectors: SinkRegistry = Object.freeze({
  memory: memorySinkConnector,
  console: consoleSinkConnector,
  foreach: foreachSinkConnector,
  foreachBatch: foreachBatchSinkConnector,
  files: filesSinkConnector,
  kafka: kafkaSinkConnector,
});

/** The connector of a source, typed for its spec. */
export function sourceConnector<S extends SourceSpec>(spec: S): SourceConnector<S> {
  return sourceConnectors[spec.kind] as unknown as SourceConnector<S>;
}

/** The connector of a sink, typed for its spec. */
export function sinkConnector<S extends SinkSpec>(spec: S): SinkConnector<S> {
  return sinkConnectors[spec.kind] as unknown as SinkConnector<S>;
}

/** The rows a source's tasks make themselves, if its rows are made in the tasks. */
export function generatedRows(spec: SourceSpec): GeneratedRows | undefined {
  return sourceConnector(spec).generated?.(spec);
}

/** The connector of a kind the checkpoint recorded (its metadata names kinds as strings). */
export function recordedSource(kind: string): SourceConnector | undefined {
  return (sourceConnectors as Record<string, SourceConnector>)[kind as SourceKind];
}

/** The connector of a sink kind the checkpoint recorded. */
export function recordedSink(kind: string): SinkConnector | undefined {
  return (sinkConnectors as Record<string, SinkConnector>)[kind as SinkKind];
}
