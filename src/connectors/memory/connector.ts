import type { SinkConnector, SourceConnector } from '../contract.js';
import { RowsToDriver } from '../driver-rows.js';
import type { MemorySinkSpec, MemorySourceSpec } from '../spec.js';
import { MemorySinkStore } from './sink-store.js';
import { MemorySourceFeed } from './source-feed.js';

/** Rows the program adds (`q.source(name).addData`), kept by the driver as a replayable log. */
export const memorySourceConnector: SourceConnector<MemorySourceSpec> = {
  feed: (spec, context) => new MemorySourceFeed(spec, context),
};

/** Rows sent back to the driver and kept there for the program (`q.sink(name)`). */
export const memorySinkConnector: SinkConnector<MemorySinkSpec> = {
  writer: (_spec, context) => new RowsToDriver(context.toDriver),
  driverRows: (spec, context) =>
    new MemorySinkStore(
      spec.name,
      context.partitions,
      context.outputMode === 'complete',
      context.resumedAfter + 1,
    ),
};
